package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// crashedLabel marks a node that testbed crash stopped, and is the only write a crash
// makes. kwok manages the nodes without it (--manage-nodes-with-label-selector): the
// label turns a node's watch event into a deletion for kwok, which then forgets the node
// and its pods and stops renewing its Lease without writing either; removing the label
// brings the node back to kwok as at its start. The pod finalizer leaves the deleted pods
// of a marked node alone, as a dead kubelet confirms nothing.
const crashedLabel = "testbed.holdfast.dev/crashed"

// nodeArg parses the flags on both sides of a command's one NODE argument.
func nodeArg(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	usage := fmt.Errorf("usage: %s NODE [--dir DIR]", fs.Name())
	if fs.NArg() == 0 {
		return "", usage
	}
	node := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usage
	}
	return node, nil
}

// setCrashed marks the node crashed or unmarks it, then waits until the pod finalizer
// agrees, so that a pod deleted once testbed crash has returned is never finalized.
func setCrashed(ctx context.Context, dir, node string, crashed bool) error {
	s, err := loadState(dir)
	if err != nil {
		return err
	}
	if s.Finalizer == "" {
		return fmt.Errorf("the testbed in %s predates testbed crash: start it again", dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var value any // null removes the label
	if crashed {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{crashedLabel: value}}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("marking node %s: %w", node, err)
	}
	checkAlive := func() error {
		for _, c := range s.Components {
			if c.Name == "pod-finalizer" && !alive(c) {
				return crashReport(c)
			}
		}
		return nil
	}
	client := &http.Client{Timeout: 2 * time.Second}
	agrees := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Finalizer+"/crashed", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s/crashed answered %s", s.Finalizer, resp.Status)
		}
		if slices.Contains(strings.Fields(string(body)), node) != crashed {
			return fmt.Errorf("the pod finalizer holds crashed: %q", strings.Fields(string(body)))
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	what := map[bool]string{true: "crashed", false: "restored"}[crashed]
	if err := waitFor(ctx, "the pod finalizer to see node "+node+" "+what, checkAlive, agrees); err != nil {
		return err
	}
	fmt.Printf("testbed: node %s %s\n", node, what)
	return nil
}
