package snapshot_test

import (
	"testing"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// TestDecodeTypedReadsManifests checks that the typed decoding reads every object of the
// benchmark's manifests, in block and flow style, as the strict JSON decoder does, rather
// than leave them to it.
func TestDecodeTypedReadsManifests(t *testing.T) {
	for _, style := range []snapshottest.Style{snapshottest.Block, snapshottest.Flow} {
		objects, typed := snapshot.CheckTypedManifests(t, snapshottest.Manifests(20, style))
		if objects == 0 || typed != objects {
			t.Errorf("%s style: decoded %d of %d objects without the JSON decoder, want all", style, typed, objects)
		}
	}
}
