// Package experiments runs the studies the report renders: the GEMM
// precision-mode table (PrecisionModes), attention quality under KV
// compression (AttentionQuality) and incremental decoding against full
// recompute (IncrementalVsRecompute). Each returns one of package
// report's section types, filled.
//
// They live apart from report because they run implementations: the
// decoding study launches the emulated kernels on an npu.Device, the
// precision table drives a backend through the harness. Package report
// then only renders data, and links no kernel, whichever backend produced
// the cases it renders (report's TestReportLinksNoImplementation).
package experiments
