// Package fuzz holds the native Go fuzz targets, one per operator
// (fuzz/<op>_test.go, named by the op's opdb.Info.FuzzTarget), that drive
// the emulator with arbitrary bytes through the harness: the op's record
// decodes the bytes (opdb.Info.FuzzDecode) and seeds the corpus
// (opdb.Info.FuzzSeeds); every decoded input must produce outputs within
// their bounds, inputs untouched and guard bands intact; nothing may
// panic. Crashers found by `make fuzz` land in testdata/fuzz and replay
// under go test.
package fuzz
