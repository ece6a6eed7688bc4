package config

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReach: Reach returns once any seed answers, and otherwise fails
// after retry_timeout naming every seed and the number of tries.
func TestReach(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name  string
		seeds []string
		want  string // "" for success; else in the error
	}{
		{"one seed of two refuses", []string{refused, c.ListenAddrs()[0]}, ""},
		{"every seed refuses", []string{refused}, "source cluster " + refused + " did not answer for 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := Cluster{BootstrapServers: tt.seeds, RequestTimeout: time.Second, RetryTimeout: time.Second}.ClientOptions()
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			err = Reach(t.Context(), cl, "source cluster")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Reach: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "connection refused")):
				t.Fatalf("Reach: %v; want an error containing %q and the refusal", err, tt.want)
			}
		})
	}
}
