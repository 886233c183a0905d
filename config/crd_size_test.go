package config

import (
	"encoding/json"
	"io/fs"
	"path"
	"testing"
)

// A client-side apply (kubectl apply without --server-side, and Argo CD's default sync)
// keeps the whole object, as JSON, in an annotation, and the API server refuses an
// object whose annotations add up to more than 256 KiB (keys and values). Every CRD must
// fit, with room for the annotations that the chart or a GitOps tool adds.
func TestCRDsFitClientSideApply(t *testing.T) {
	const (
		annotationsLimit = 256 << 10 // the API server's TotalAnnotationSizeLimitB
		lastApplied      = "kubectl.kubernetes.io/last-applied-configuration"
		// headroom is left for other annotations (the chart's keep policy, a GitOps
		// tool's tracking id) and labels that a release adds to the object.
		headroom = 16 << 10
	)
	paths, err := fs.Glob(files, "crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("found %d CRDs in config/crd/bases, want 3: %v", len(paths), paths)
	}
	for _, p := range paths {
		t.Run(path.Base(p), func(t *testing.T) {
			data, err := files.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(p, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range objs {
				// kubectl writes the object as it was given, without its own annotation,
				// encoded as compact JSON and a newline.
				body, err := json.Marshal(obj.Object)
				if err != nil {
					t.Fatal(err)
				}
				size := len(lastApplied) + len(body) + 1
				for k, v := range obj.GetAnnotations() {
					size += 2 * (len(k) + len(v)) // once in the object, once in its copy
				}
				if size > annotationsLimit-headroom {
					t.Errorf("%s %s: a client-side apply would write %d bytes of annotations; the limit is %d, and %d is left for others", obj.GetKind(), obj.GetName(), size, annotationsLimit, headroom)
				}
				t.Logf("%s: %d bytes of annotations in a client-side apply", obj.GetName(), size)
			}
		})
	}
}
