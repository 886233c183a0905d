package plan_test

import "time"

// now is the time every test plans at.
var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
