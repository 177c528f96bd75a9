// Command npuverify tests and verifies NPU operators (docs/cli.md):
//
//	npuverify ops                                  list ops, params, modes, inputs, outputs
//	npuverify run OP [--param k=v]... --in NAME=FILE.npy... --out DIR [--backend B] [--profile P]
//	                                               write DIR/<output>.npy and DIR/cost.json
//	npuverify check [--golden DIR] [--backend B] [--op OP] [--policy P] [--shard I/N]
//	                [--json FILE] [--junit FILE]   verify golden cases; table on stdout
//	npuverify report [--out DIR] [--format md,json,html]   accuracy + performance report
//	npuverify golden update|verify [--dir DIR]
//	npuverify explore [--op OP]... [--backend B] [--budget D] [--seed N] [--out DIR] [--db DIR] [--json FILE]
//	                                               search for failing cases, shrink them, add them to a store
//
// Exit codes: 0 pass, 1 verification failed, 2 usage or input error,
// 3 backend failure. Errors go to stderr as "npuverify: <where>: <what>".
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
