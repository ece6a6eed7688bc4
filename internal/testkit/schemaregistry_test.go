package testkit

import (
	"os"
	"regexp"
	"testing"
)

// TestSchemaRegistryVersionMatchesMakefile: the registry `make tools`
// unpacks is the one StartSchemaRegistry looks for.
func TestSchemaRegistryVersionMatchesMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^APICURIO_VERSION := (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no APICURIO_VERSION in the Makefile")
	}
	if got := string(m[1]); got != SchemaRegistryVersion {
		t.Fatalf("the Makefile fetches Apicurio Registry %s but SchemaRegistryVersion is %s", got, SchemaRegistryVersion)
	}
}
