package snapshot

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadLimited checks that the size a file is expected to have only sizes the buffer:
// what is read, and the limit, are the same whether it is right, too small, too large or
// unknown.
func TestReadLimited(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 1000, 1001, 4096} {
		data := bytes.Repeat([]byte("x"), n)
		for _, size := range []int64{0, int64(n), int64(n) / 2, int64(n) * 2, 1 << 40} {
			got, err := readLimited(bytes.NewReader(data), 1000, size)
			switch {
			case n > 1000:
				if err == nil || !strings.Contains(err.Error(), "larger than the 1000-byte limit") {
					t.Errorf("%d bytes, size %d: error %v, want over the limit", n, size, err)
				}
			case err != nil || !bytes.Equal(got, data):
				t.Errorf("%d bytes, size %d: read %d bytes, error %v", n, size, len(got), err)
			}
		}
	}
}
