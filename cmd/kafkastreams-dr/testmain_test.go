package main

import (
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestMain gives the whole test binary the AWS variables of the test kit's
// S3 servers (testkit.SetS3ProcessEnv), so that the S3 tests, whose
// S3Server.SetEnv then sets nothing, can run in parallel with each other.
func TestMain(m *testing.M) { testkit.MainWithS3ProcessEnv(m) }
