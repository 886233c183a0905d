package disruptionpolicy

import (
	"strings"
	"testing"
)

func TestFailpointFromEnv(t *testing.T) {
	for value, wantErr := range map[string]bool{"": false, "after-surge": false, "before-loosening": false, "surge-after-deployment": true} {
		t.Setenv(FailpointEnv, value)
		fp, err := failpointFromEnv()
		if (err != nil) != wantErr || err == nil && string(fp) != value {
			t.Errorf("%s=%q: failpoint %q, error %v", FailpointEnv, value, fp, err)
		}
		if err != nil && !strings.Contains(err.Error(), FailpointEnv) {
			t.Errorf("the error %q does not name %s", err, FailpointEnv)
		}
	}
}
