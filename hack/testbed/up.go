package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

type upOptions struct {
	dir           string
	bins          binaries
	nodes, zones  int
	podReadyDelay time.Duration
	apiQPS        int
	timeout       time.Duration
}

// ZoneName is the topology.kubernetes.io/zone of the i-th zone: zone-a, zone-b, ...
func zoneName(i int) string { return "zone-" + string(rune('a'+i%26)) }

// freePorts returns n ports free on loopback, chosen below the kernel's ephemeral
// range: a port taken from that range (port 0) can be handed to another process's
// outgoing connection between the choice and the component's own bind, which happened
// with several testbeds starting at once ("bind: address already in use"). Ports below
// the range are only ever taken by a bind, and each is checked by one.
func freePorts(n int) ([]int, error) {
	low, high := listenRange()
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no %d free ports in %d-%d", n, low, high)
		}
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// listenRange is where freePorts chooses: the 12,000 ports below the kernel's ephemeral
// range (32768-60999 by default), not below 1024.
func listenRange() (low, high int) {
	high = 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(data), &lo, &hi); err == nil && lo > 2048 {
			high = lo
		}
	}
	return max(1024, high-12000), high
}

// bindRetries is how many times upRetrying starts the testbed again on other ports.
const bindRetries = 3

// upRetrying is up, started again on other ports when a component could not bind its
// own: freePorts checks each port with a bind of its own and lets it go for the
// component, and another process can bind it in between (a testbed of another e2e
// package starting at once did: "bind: address already in use").
func upRetrying(ctx context.Context, o upOptions) error {
	for attempt := 1; ; attempt++ {
		err := up(ctx, o)
		if err == nil || attempt > bindRetries || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		fmt.Fprintf(os.Stderr, "testbed: a port was taken before its component bound it; starting again on other ports (%d of %d): %v\n", attempt, bindRetries, err)
		if derr := down(o.dir); derr != nil {
			return errors.Join(err, derr)
		}
	}
}

func up(ctx context.Context, o upOptions) error {
	if _, err := os.Stat(statePath(o.dir)); err == nil {
		return fmt.Errorf("a testbed is already in %s: run testbed down --dir %s first", o.dir, o.dir)
	}
	for _, sub := range []string{"pki", "etcd", "logs"} {
		if err := os.MkdirAll(filepath.Join(o.dir, sub), 0o755); err != nil {
			return err
		}
	}
	pki := filepath.Join(o.dir, "pki")
	creds, err := generateCredentials(pki)
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	ports, err := freePorts(7)
	if err != nil {
		return fmt.Errorf("choosing ports: %w", err)
	}
	etcdClient, etcdPeer, apiPort, cmPort, schedPort, kwokPort, finalizerPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	self, err := os.Executable()
	if err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, creds); err != nil {
		return err
	}
	stages, err := testbedStages(o.bins.stages(), filepath.Join(o.dir, "kwok-stages.yaml"), o.podReadyDelay)
	if err != nil {
		return err
	}
	kwokConfigs := []string{"--config=" + stages}
	if o.apiQPS > 0 {
		tuning := filepath.Join(o.dir, "kwok-tuning.yaml")
		if err := writeKwokTuning(tuning, o.apiQPS); err != nil {
			return err
		}
		// kwok logs every pod it moves, which at this size costs a core of its own.
		kwokConfigs = append(kwokConfigs, "--config="+tuning, "--v=WARN")
	}
	clientFlags := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1"}
	schedulerFlags := clientFlags
	if o.apiQPS > 0 {
		config := filepath.Join(o.dir, "scheduler.yaml")
		if err := writeSchedulerConfig(config, kubeconfig, o.apiQPS); err != nil {
			return err
		}
		// kube-scheduler ignores its client flags beside a config file: the file
		// carries them.
		schedulerFlags = []string{"--config=" + config, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1"}
	}
	p := func(name string) string { return filepath.Join(pki, name) }
	loopback := func(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }
	comps := []component{
		{Name: "etcd", Binary: o.bins.etcd(), Args: []string{
			"--name=testbed", "--data-dir=" + filepath.Join(o.dir, "etcd"),
			"--listen-client-urls=" + loopback(etcdClient), "--advertise-client-urls=" + loopback(etcdClient),
			"--listen-peer-urls=" + loopback(etcdPeer), "--initial-advertise-peer-urls=" + loopback(etcdPeer),
			"--initial-cluster=testbed=" + loopback(etcdPeer),
			// A test cluster's data is thrown away: skipping fsync keeps a slow disk from
			// stalling every write.
			"--unsafe-no-fsync", "--log-level=warn",
		}},
		{Name: "kube-apiserver", Binary: o.bins.kube(), Args: []string{
			"apiserver", "--etcd-servers=" + loopback(etcdClient),
			"--secure-port=" + strconv.Itoa(apiPort), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
			"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc", "--token-auth-file=" + p("tokens.csv"),
			"--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
			// Endpoints may not hold a loopback address, so the API server cannot
			// publish itself in the kubernetes Service here.
			"--endpoint-reconciler-type=none",
		}},
		{Name: "kube-controller-manager", Binary: o.bins.kube(), Args: append([]string{
			"controller-manager", "--secure-port=" + strconv.Itoa(cmPort),
			"--service-account-private-key-file=" + p("sa.key"), "--root-ca-file=" + p("ca.crt"),
			"--controllers=*,-nodeipam",
		}, append(controllerManagerRate(o.apiQPS), clientFlags...)...)},
		{Name: "kube-scheduler", Binary: o.bins.kube(), Args: append([]string{
			"scheduler", "--secure-port=" + strconv.Itoa(schedPort),
		}, schedulerFlags...)},
		{Name: "kwok", Binary: o.bins.kwok(), Args: append(kwokConfigs,
			// Every node but the crashed ones: see crashedLabel.
			"--kubeconfig="+kubeconfig, "--manage-nodes-with-label-selector=!"+crashedLabel,
			"--node-lease-duration-seconds="+strconv.Itoa(leaseSeconds(o.apiQPS)),
			"--cidr=10.244.0.0/16", "--node-ip=127.0.0.1", "--server-address=127.0.0.1:"+strconv.Itoa(kwokPort),
		)},
		{Name: "pod-finalizer", Binary: self, Args: append([]string{
			"finalize-pods", "--kubeconfig=" + kubeconfig, "--health=127.0.0.1:" + strconv.Itoa(finalizerPort),
		}, finalizerRate(o.apiQPS)...)},
	}
	for i := range comps {
		comps[i].Env = gcTuning(o.apiQPS, comps[i].Name)
	}
	finalizer := loopback(finalizerPort)
	st := state{Kubeconfig: kubeconfig, Server: server, Finalizer: finalizer}
	exited := map[string]<-chan struct{}{}
	// Whatever happens next, down must be able to stop what has started.
	save := func() error { return st.save(o.dir) }
	checkAlive := func() error {
		for _, c := range st.Components {
			select {
			case <-exited[c.Name]:
				return crashReport(c)
			default:
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	healthy := map[string]func(context.Context) error{
		"etcd":                    httpOK(loopback(etcdClient)+"/health", nil),
		"kube-apiserver":          httpOK(server+"/readyz", &creds),
		"kube-controller-manager": httpOK("https://127.0.0.1:"+strconv.Itoa(cmPort)+"/healthz", nil),
		"kube-scheduler":          httpOK("https://127.0.0.1:"+strconv.Itoa(schedPort)+"/healthz", nil),
		"kwok":                    httpOK("http://127.0.0.1:"+strconv.Itoa(kwokPort)+"/healthz", nil),
		"pod-finalizer":           httpOK(finalizer+"/healthz", nil),
	}
	for i := range comps {
		c := &comps[i]
		c.Binary, _ = filepath.Abs(c.Binary)
		c.Log = filepath.Join(o.dir, "logs", c.Name+".log")
		ch, err := start(c)
		if err != nil {
			return err
		}
		exited[c.Name] = ch
		st.Components = append(st.Components, *c)
		if err := save(); err != nil {
			return err
		}
		if err := waitFor(ctx, c.Name+" to be healthy", checkAlive, healthy[c.Name]); err != nil {
			return err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	if o.apiQPS > 0 {
		// A thousand nodes at client-go's default of 5 requests a second take minutes.
		cfg.QPS, cfg.Burst = float32(o.apiQPS), 2*o.apiQPS
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, cs, o.nodes, o.zones); err != nil {
		return err
	}
	if err := waitFor(ctx, fmt.Sprintf("%d nodes to be Ready", o.nodes), checkAlive, nodesReady(cs, o.nodes)); err != nil {
		return err
	}
	// Pods need the default ServiceAccount, which a controller creates shortly after start.
	if err := waitFor(ctx, "the default ServiceAccount", checkAlive, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	fmt.Printf("testbed: %s is up with %d nodes in %d zones\n", server, o.nodes, o.zones)
	fmt.Printf("testbed: export KUBECONFIG=%s\n", kubeconfig)
	fmt.Printf("testbed: kubectl of the same release is %s\n", o.bins.kubectl())
	return nil
}

// waitFor polls ready until it succeeds, a component dies, or ctx ends.
func waitFor(ctx context.Context, what string, checkAlive func() error, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := checkAlive(); err != nil {
			return false, err
		}
		last = ready(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("waiting for %s: %w (last: %v)", what, err, last)
	}
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// httpOK returns a check that url answers 200. Component health endpoints are served
// over TLS with self-signed certificates, except for the API server, whose CA we made.
func httpOK(url string, creds *credentials) func(context.Context) error {
	tlsConfig := &tls.Config{InsecureSkipVerify: true} // #nosec: loopback health checks of self-signed components
	var token string
	if creds != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(creds.caPEM)
		tlsConfig = &tls.Config{RootCAs: pool}
		token = creds.token
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s", url, resp.Status)
		}
		return nil
	}
}

func writeKubeconfig(path, server string, creds credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: creds.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: creds.token}
	cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "testbed"
	return clientcmd.WriteToFile(*cfg, path)
}

// controllerManagerRate is kube-controller-manager's request rate and the workers of the
// controllers that make and count pods: with the defaults, tens of thousands of pods take
// hours to create and budgets' counts lag minutes behind the pods.
func controllerManagerRate(qps int) []string {
	if qps == 0 {
		return []string{"--kube-api-qps=200", "--kube-api-burst=400"}
	}
	workers := strconv.Itoa(max(5, qps/25))
	return []string{
		"--kube-api-qps=" + strconv.Itoa(qps), "--kube-api-burst=" + strconv.Itoa(2*qps),
		"--node-monitor-grace-period=" + strconv.Itoa(5*leaseSeconds(qps)/4) + "s",
		"--concurrent-deployment-syncs=" + workers, "--concurrent-replicaset-syncs=" + workers,
		"--concurrent-statefulset-syncs=" + workers, "--concurrent-daemonset-syncs=" + workers,
		"--concurrent-disruption-syncs=" + workers,
	}
}

// leaseSeconds is the duration of kwok's node Leases, renewed every quarter of it: without
// Leases the node lifecycle controller marks every node NotReady about a minute after
// start. A testbed of a thousand nodes renewing every 10 s spends a hundred writes a
// second of its one API server on them, and a renewal late under that load makes the
// node NotReady and its pods not Ready for good (kwok does not make them Ready again);
// there, Leases last 4 minutes and the controller-manager waits 5 before it gives up on
// a node.
func leaseSeconds(qps int) int {
	if qps == 0 {
		return 40
	}
	return 240
}

// writeSchedulerConfig configures kube-scheduler for a large testbed. Its request rate:
// one binding per pod at its default of 50 a second makes the scheduler the slowest step
// of set-up. Its spreading: the default PodTopologySpread constraints spread a workload
// over hostnames and zones, and the zone constraint counts the workload's pods on every
// node of the cluster for each pod it places, three fifths of the scheduler's CPU at 1,000
// nodes, on cores the API server needs. Here the default spreads over hostnames only;
// kwok's nodes are dealt round-robin to the zones, so workloads still land in every zone,
// evenly but not by rule. And it scores a tenth of the nodes that fit, as a default
// scheduler does at 5,000 nodes, rather than two fifths.
func writeSchedulerConfig(path, kubeconfig string, qps int) error {
	doc := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 10
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 3
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
`, kubeconfig, qps, 2*qps)
	return os.WriteFile(path, []byte(doc), 0o644)
}

// gcTuning trades memory for CPU in the control plane of a large testbed: at tens of
// thousands of pods on two cores, the API server and the scheduler spent an eighth of
// their CPU marking garbage. Collecting at five times the live heap rather than twice
// leaves that CPU to the work; a ceiling per process (17 GiB in all) makes each collect
// sooner rather than swap. A small testbed keeps Go's defaults.
func gcTuning(qps int, name string) []string {
	if qps == 0 {
		return nil
	}
	limit := map[string]string{"kube-apiserver": "6GiB", "kube-controller-manager": "3GiB"}[name]
	if limit == "" {
		limit = "2GiB"
	}
	return []string{"GOGC=400", "GOMEMLIMIT=" + limit}
}

// finalizerRate is the pod finalizer's request rate and workers: its defaults keep up
// with the tests' deletions; at qps, it keeps up with kwok moving pods.
func finalizerRate(qps int) []string {
	if qps == 0 {
		return nil
	}
	return []string{"--qps=" + strconv.Itoa(qps), "--workers=" + strconv.Itoa(max(4, qps/25))}
}

// writeKwokTuning writes a kwok configuration whose workers keep up with a control plane
// running at qps: kwok's own client is not rate limited, but by default it moves pods
// and nodes through their stages four at a time.
func writeKwokTuning(path string, qps int) error {
	n := max(4, qps/25)
	doc := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
  nodeLeaseParallelism: %d
`, n, n, n)
	return os.WriteFile(path, []byte(doc), 0o644)
}

// createNodes registers n kwok nodes spread round-robin over the zones.
func createNodes(ctx context.Context, cs kubernetes.Interface, n, zones int) error {
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname":      name,
					"kubernetes.io/os":            "linux",
					"kubernetes.io/arch":          "amd64",
					"topology.kubernetes.io/zone": zoneName((i - 1) % zones),
					"type":                        "kwok",
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    nodeResources(),
				Allocatable: nodeResources(),
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return nil
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

func nodesReady(cs kubernetes.Interface, want int) func(context.Context) error {
	return func(ctx context.Context) error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < want {
			return fmt.Errorf("%d of %d nodes Ready", ready, want)
		}
		return nil
	}
}
