// Package fuzz holds the native Go fuzz targets, one per operator, that
// drive the emulator with arbitrary bytes: any input must either be
// rejected with an error or produce outputs within their bounds; nothing
// may panic. Seed corpora live in testdata/fuzz and replay under go test.
package fuzz
