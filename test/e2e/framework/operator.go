package framework

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/internal/operator"
)

// HoldfastClient returns a client that knows holdfast's types as well as Kubernetes'.
func (f *Framework) HoldfastClient() client.Client {
	f.T.Helper()
	scheme, err := operator.Scheme()
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := client.New(f.Config, client.Options{Scheme: scheme})
	if err != nil {
		f.T.Fatal(err)
	}
	return c
}

// CRDs returns holdfast's CustomResourceDefinitions, as config/crd/bases holds them.
func (f *Framework) CRDs() []*unstructured.Unstructured {
	f.T.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.T.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.T.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			f.T.Fatalf("decoding %s: %v", file, err)
		}
		out = append(out, u)
	}
	return out
}

// InstallCRDs applies config/crd/bases with c, as `make deploy` would, and waits until
// the apiserver serves every one of lists (one list type per kind the test needs: the
// operator starts only once every kind it watches is served).
func (f *Framework) InstallCRDs(c client.Client, lists ...client.ObjectList) {
	f.T.Helper()
	var crds []string
	for _, u := range f.CRDs() {
		if err := c.Apply(f.Ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
			f.T.Fatalf("applying CRD %s: %v", u.GetName(), err)
		}
		crds = append(crds, u.GetName())
	}
	// The operator watches every kind of the group, also those this test does not list.
	f.Eventually(defaultTimeout, "the CRDs established", func(ctx context.Context) (bool, error) {
		for _, name := range crds {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
	f.Eventually(defaultTimeout, "the CRDs served", func(ctx context.Context) (bool, error) {
		for _, l := range lists {
			if err := c.List(ctx, l); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// StartOperator runs holdfast's manager in-process, as `holdfast operator` does, with
// leader election in the test's namespace. The returned function stops it and waits
// until it has stopped (as a killed operator would, but releasing its Lease); it also
// runs when the test ends.
func (f *Framework) StartOperator() (stop func()) {
	f.T.Helper()
	return f.StartOperatorAs(f.Config)
}

// StartOperatorAs is StartOperator with the credentials of cfg, such as a
// ServiceAccount's bound to the operator's ClusterRole, where RBAC is under test.
func (f *Framework) StartOperatorAs(cfg *rest.Config) (stop func()) {
	f.T.Helper()
	mgr, err := operator.New(cfg, operator.Options{
		MetricsAddr:             "0",
		ProbeAddr:               "0",
		LeaderElection:          true,
		LeaderElectionNamespace: f.Namespace,
		SkipNameValidation:      true,
	})
	if err != nil {
		f.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			f.T.Errorf("operator: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	f.T.Cleanup(stop)
	// The operator is useful once it leads; until then it watches without acting.
	select {
	case <-mgr.Elected():
	case <-time.After(defaultTimeout):
		f.T.Fatal("the operator was not elected leader within a minute")
	}
	return stop
}
