package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// handOffFilter is how a node autoscaler empties a node: DaemonSets' pods stay with it,
// emptyDir data goes, and a pod without a controller is its own rule's business (the
// hand-off reads it as a blocker), not a question of room.
var handOffFilter = availability.DrainFilter{Force: true, DeleteEmptyDirData: true, IgnoreDaemonSets: true}

// HandOffRoom says whether node's pods in snap at now, DaemonSets' aside, would all fit
// on the other nodes, which Karpenter and cluster-autoscaler require before they remove a
// node: "" when they do, else the first that fits nowhere and why. For the hand-off of a
// Surge single replica's node, the replica's own pod is one of them: its replacement is
// where the surge's new pod goes. It is the drain's room check (Unplaceable), with the
// autoscalers' rules; snap is not changed.
func HandOffRoom(snap *snapshot.Snapshot, now time.Time, node string) (string, error) {
	reasons, err := Unplaceable(snap, now, node, handOffFilter)
	if err != nil || len(reasons) == 0 {
		return "", err
	}
	sortReasons(reasons)
	r := reasons[0]
	return fmt.Sprintf("%s %s/%s: %s", strings.ToLower(r.Kind), r.Namespace, r.Name, r.Message), nil
}
