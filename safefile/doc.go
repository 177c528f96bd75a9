// Package safefile reads and writes files without following links, blocking on FIFOs, or replacing what is not a regular file.
package safefile
