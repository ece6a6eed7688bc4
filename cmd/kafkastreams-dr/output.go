// Rendering shared by every command's output: counts with their noun,
// tables, wrapped text, JSON, byte sizes. Each command's own rendering is
// in its output_<command>.go; none of it does Kafka or storage I/O.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// plural returns "1 topic" or "2 topics": n and the noun for n.
func plural(n int, one, many string) string { return plural64(int64(n), one, many) }

// partitionsText names partition numbers in words: "partition 1",
// "partitions 1, 3".
func partitionsText(partitions []int32) string {
	nums := make([]string, len(partitions))
	for i, p := range partitions {
		nums[i] = strconv.Itoa(int(p))
	}
	if len(nums) == 1 {
		return "partition " + nums[0]
	}
	return "partitions " + strings.Join(nums, ", ")
}

// tailsIncluded is the clause that says a count of topics includes n
// in-flight tails of repartition topics: "" for none.
func tailsIncluded(n int) string {
	if n == 0 {
		return ""
	}
	return ", in-flight tails of " + plural(n, "repartition topic", "repartition topics") + " included"
}

// plural64 is plural for int64 counts.
func plural64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printWarnings(w io.Writer, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", plural(len(warnings), "warning", "warnings"))
	for _, s := range warnings {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
