package drill

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// JUnitSuiteName is the name of the JUnit test suite a drill report writes.
const JUnitSuiteName = "kafkastreams-dr drill"

type junitSuite struct {
	XMLName    xml.Name        `xml:"testsuite"`
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  *junitText      `xml:"system-out,omitempty"`
}

// junitText is element text as CDATA, so that multi-line details stay
// readable in the file.
type junitText struct {
	Text string `xml:",cdata"`
}

func cdata(s string) *junitText {
	if s == "" {
		return nil
	}
	return &junitText{Text: xmlSafe(s)}
}

// xmlSafe replaces the characters XML 1.0 does not allow (control
// characters other than tab, newline and carriage return; invalid UTF-8)
// with U+FFFD: CDATA sections are not escaped.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF) || r == utf8.RuneError:
			return '\uFFFD'
		}
		return r
	}, s)
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// JUnit writes the report as JUnit XML: one <testsuite> named
// JUnitSuiteName with one <testcase classname="drill.<application.id>">
// per phase, a <failure> (message: the error or first problem; text: all
// of them) for the failed phase, <skipped/> for the phases after it, and
// <properties> rto_seconds, rpo_seconds, rto_data_restored_seconds,
// rto_app_running_seconds, rto_app_caught_up_seconds, records,
// records_restored, backup_id, restore_id, application_id, strategy and
// ok. A property the drill did not reach is left out, never 0 or empty:
// rto_seconds and rto_data_restored_seconds when the drill did not get to
// restored and verified (Report.RTOReached), the application's two when it
// did not start the application or the application did not get there,
// rpo_seconds when it did not read the backup's cut (Report.RPOKnown),
// backup_id and restore_id when there is none. Each restored state store
// adds a property state.<store> (Report.States: equal, different or not
// recorded). Warnings go to the suite's <system-out>.
func (r *Report) JUnit(w io.Writer) error {
	classname := "drill"
	if r.ApplicationID != "" {
		classname += "." + r.ApplicationID
	}
	total := r.FinishedAt.Sub(r.StartedAt)
	if total < 0 {
		total = 0
	}
	s := junitSuite{
		Name:      JUnitSuiteName,
		Time:      seconds(total),
		SystemOut: cdata(strings.Join(r.Warnings, "\n")),
	}
	prop := func(name, value string, reached bool) {
		if reached {
			s.Properties = append(s.Properties, junitProperty{name, value})
		}
	}
	prop("rto_seconds", seconds(time.Duration(r.RTO)), r.RTOReached())
	prop("rpo_seconds", seconds(time.Duration(r.RPO)), r.RPOKnown())
	prop("rto_data_restored_seconds", seconds(time.Duration(r.RTODataRestored)), r.RTODataRestoredReached())
	prop("rto_app_running_seconds", seconds(time.Duration(r.RTOAppRunning)), r.RTOAppRunningReached())
	prop("rto_app_caught_up_seconds", seconds(time.Duration(r.RTOAppCaughtUp)), r.RTOAppCaughtUpReached())
	prop("records", strconv.FormatInt(r.Volume.Records, 10), true)
	prop("records_restored", strconv.FormatInt(r.Volume.RecordsRestored, 10), true)
	prop("backup_id", r.BackupID, r.BackupID != "")
	prop("restore_id", r.RestoreID, r.RestoreID != "")
	prop("application_id", r.ApplicationID, r.ApplicationID != "")
	prop("strategy", string(r.Strategy), true)
	prop("ok", strconv.FormatBool(r.OK), true)
	for _, st := range r.States {
		prop("state."+st.Store, st.Result, true) // equal, different or not recorded
	}
	if !r.StartedAt.IsZero() {
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	s.Hostname, _ = os.Hostname()
	for _, p := range r.Phases {
		c := junitCase{Classname: classname, Name: p.Name, Time: seconds(time.Duration(p.Duration)), SystemOut: cdata(p.Detail)}
		switch p.Status {
		case StatusFailed:
			s.Failures++
			c.Failure = &junitFailure{Message: failureMessage(&p), Type: failureType(&p), Text: xmlSafe(failureText(&p))}
		case StatusSkipped:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: "not run: an earlier phase failed"}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encode the drill report as JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// failureMessage is one line: the error, with the first problem and how
// many more there are.
func failureMessage(p *Phase) string {
	msg := p.Error
	if len(p.Problems) > 0 {
		if msg != "" {
			msg += ": "
		}
		msg += p.Problems[0]
		if n := len(p.Problems) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %s)", plural(int64(n), "more problem", "more problems"))
		}
	}
	return msg
}

func failureType(p *Phase) string {
	switch {
	case p.Refused:
		return "refused"
	case len(p.Problems) > 0:
		return "problems"
	}
	return "error"
}

func failureText(p *Phase) string {
	text := p.Error
	for _, pr := range p.Problems {
		if text != "" {
			text += "\n"
		}
		text += "- " + pr
	}
	return text
}
