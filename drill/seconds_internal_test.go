package drill

import (
	"strconv"
	"testing"
	"time"
)

// The repository's drill report and the JSON report must hold the same
// number for one measurement: estimate and the tests compare them. A CI run
// recorded 5.7940000000000005 (time.Duration.Seconds of 5.794 s) where the
// JSON report wrote 5.794.
func TestRecordedSecondsEqualTheJSONReport(t *testing.T) {
	for ms := int64(0); ms <= 120_000; ms++ {
		d := Duration(time.Duration(ms)*time.Millisecond + 321*time.Microsecond)
		b, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := recordedSeconds(d); got != want {
			t.Fatalf("%v: recorded %v, the JSON report writes %s", time.Duration(d), got, b)
		}
	}
}
