package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/npuverify/npuverify/harness"
)

// JUnit XML, the dialect CI systems (Jenkins, GitLab, GitHub actions
// reporters) read: one testsuite, one testcase per golden case with the op
// as classname; a failed verification is a <failure>, a case that could not
// be judged an <error>. A case whose outputs differed between the runs of
// check --repeat is a <failure> of type "nondeterministic"; one slower than
// its --baseline, of type "slower"; one below --min-efficiency, of type
// "inefficient".

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func writeJUnit(w io.Writer, results []harness.Outcome, meta map[string]string) error {
	s := junitSuite{Name: "npuverify check", Tests: len(results)}
	var total time.Duration
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		s.Properties = append(s.Properties, junitProperty{Name: k, Value: meta[k]})
	}
	for i := range results {
		r := &results[i]
		op, name, _ := strings.Cut(r.ID, "/")
		c := junitCase{Classname: op, Name: name, Time: seconds(r.Elapsed)}
		total += r.Elapsed
		switch {
		case r.Err != nil:
			s.Errors++
			typ := "backend"
			if r.Verdict() == harness.VerdictInputError {
				typ = "input"
			}
			c.Error = &junitMessage{Message: firstLine(r.Err.Error()), Type: typ, Text: r.Err.Error()}
		case !r.Pass():
			s.Failures++
			f := r.Failure()
			typ := "verification"
			switch v := r.Verdict(); v {
			case harness.VerdictNondeterministic, harness.VerdictSlower, harness.VerdictInefficient:
				typ = v
			}
			c.Failure = &junitMessage{Message: firstLine(f), Type: typ, Text: f}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = seconds(total)
	doc := junitSuites{Name: "npuverify", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
