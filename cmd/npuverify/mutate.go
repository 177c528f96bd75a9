package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/mutation"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/safefile"
)

const mutateSynopsis = "mutate [--first] [--fault F]... [--profile P] [--json FILE] [--list]"

// cmdMutate is "mutate": the mutation score. It runs the default suite
// (the embedded golden cases and the generated UT cases) against the
// emulator with each fault of the catalogue switched on, and against the
// correct emulator and the valid variants, then prints the table: fault,
// the first case and check that caught it (bound checks, and with the
// exact comparison) or SURVIVED, the score and the false alarms. It exits
// 1 when a fault survives the bound checks or a false alarm is raised.
func cmdMutate(args []string, stdout, stderr io.Writer) error {
	const where = "mutate"
	fs := newFlagSet(where, mutateSynopsis, stdout)
	first := fs.Bool("first", false, "stop each fault's run at its first bound catch (faster; no per-fault case counts)")
	var faults multiFlag
	fs.Var(&faults, "fault", "score only this fault (repeatable; default: the whole catalogue, see --list)")
	profile := fs.String("profile", "ascend910b", "device profile: a built-in name ("+strings.Join(npu.ProfileNames(), ", ")+") or a JSON file")
	jsonOut := fs.String("json", "", "also write the result as JSON to FILE")
	list := fs.Bool("list", false, "list the fault catalogue and exit")
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	catalogue := opdb.Faults()
	if *list {
		for _, f := range catalogue {
			fmt.Fprintf(stdout, "%-36s %s\n", f.Fault, f.Models)
		}
		return nil
	}
	opt := mutation.Options{AllCases: !*first}
	for k, name := range faults {
		// A fault scored twice would count twice (2/2 for one fault).
		if slices.Contains(faults[:k], name) {
			return usageErr(where, "--fault %q: given more than once", name)
		}
		i := slices.IndexFunc(catalogue, func(f kernels.FaultInfo) bool { return string(f.Fault) == name })
		if i < 0 {
			return usageErr(where, "--fault %q: not in the catalogue (see npuverify mutate --list)", name)
		}
		opt.Faults = append(opt.Faults, catalogue[i])
	}
	prof, err := loadProfile(*profile)
	if err != nil {
		return usageErr(where, "--profile %s: %v", *profile, err)
	}
	opt.Profile = &prof
	if err := checkResultFiles(where, "", resultFile{flag: "--json", path: *jsonOut}); err != nil {
		return err // before the first run (resultfiles.go)
	}
	intr := catchSignals(nil, stderr) // one shutdown path (signal.go)
	defer intr.stop()
	res, err := mutation.Run(intr.ctx, opt)
	if err := intr.err(where, "no score written"); err != nil {
		return err
	}
	if err != nil {
		return backendErr(where, err)
	}
	// The result file first: a closed standard output must not cost it,
	// nor turn the score into a backend failure.
	if *jsonOut != "" {
		err := safefile.Write(*jsonOut, 0o644, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		})
		if err != nil {
			return inputErr(where, fmt.Errorf("--json: %w", err))
		}
	}
	res.WriteTable(stdout) // a closed stdout is not the score's failure
	bound, _, total := res.Score()
	if bound < total || res.FalseAlarms() > 0 {
		return failed{exitFail}
	}
	return nil
}
