package validate

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifest is contrib/kubernetes/daemonset.yaml, decoded strictly into the
// Kubernetes API's own types: a misspelt or misplaced field, a duplicate
// key or a wrong type fails, as the API server would refuse it.
type manifest struct {
	ns  *corev1.Namespace
	ds  *appsv1.DaemonSet
	svc *corev1.Service
}

func loadManifest(t *testing.T) manifest {
	t.Helper()
	var m manifest
	docs := regexp.MustCompile(`(?m)^---\s*$`).Split(readFile(t, manifestPath), -1)
	for i, doc := range docs {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: document %d: %v", manifestPath, i+1, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			m.ns = &corev1.Namespace{}
			obj = m.ns
		case "apps/v1 DaemonSet":
			m.ds = &appsv1.DaemonSet{}
			obj = m.ds
		case "v1 Service":
			m.svc = &corev1.Service{}
			obj = m.svc
		default:
			t.Fatalf("%s: document %d: unexpected %s %s", manifestPath, i+1, tm.APIVersion, tm.Kind)
		}
		decodeStrict(t, tm.Kind, doc, obj)
	}
	if m.ns == nil || m.ds == nil || m.svc == nil {
		t.Fatalf("%s: want a Namespace, a DaemonSet and a Service", manifestPath)
	}
	return m
}

// decodeStrict decodes a manifest document as the API server does: field
// names case-sensitive (encoding/json alone would take
// readOnlyRootFileSystem for readOnlyRootFilesystem), unknown and
// duplicate fields refused.
func decodeStrict(t *testing.T, kind, doc string, obj any) {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %s: %v", manifestPath, kind, err)
	}
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		t.Fatalf("%s: %s: %v", manifestPath, kind, err)
	}
	for _, e := range strict {
		t.Errorf("%s: %s: %v", manifestPath, kind, e)
	}
}

// checkMeta applies the API server's rules for names and labels.
func checkMeta(t *testing.T, kind string, om metav1.ObjectMeta, namespaced bool) {
	t.Helper()
	for _, e := range validation.IsDNS1123Label(om.Name) {
		t.Errorf("%s name %q: %s", kind, om.Name, e)
	}
	if namespaced && om.Namespace == "" {
		t.Errorf("%s %s has no namespace", kind, om.Name)
	}
	checkLabels(t, kind+" "+om.Name, om.Labels)
}

func checkLabels(t *testing.T, what string, labels map[string]string) {
	t.Helper()
	for k, v := range labels {
		for _, e := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", what, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s value %q: %s", what, k, v, e)
		}
	}
}

func TestManifestNamespace(t *testing.T) {
	m := loadManifest(t)
	checkMeta(t, "Namespace", m.ns.ObjectMeta, false)
	// The Pod Security admission refuses hostNetwork below "privileged".
	if got := m.ns.Labels["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("namespace enforces pod security %q: hostNetwork pods need privileged", got)
	}
	if m.ds.Namespace != m.ns.Name || m.svc.Namespace != m.ns.Name {
		t.Errorf("DaemonSet in %q, Service in %q, want both in the Namespace %q", m.ds.Namespace, m.svc.Namespace, m.ns.Name)
	}
}

func TestManifestDaemonSet(t *testing.T) {
	m := loadManifest(t)
	ds := m.ds
	checkMeta(t, "DaemonSet", ds.ObjectMeta, true)
	checkLabels(t, "pod template", ds.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		t.Fatalf("selector: %v", err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("selector %s does not select the pod template's labels %v (the API server refuses that)", sel, ds.Spec.Template.Labels)
	}

	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork {
		t.Error("hostNetwork is not true: Test Connections' ephemeral ports would sit behind the pod network's NAT")
	}
	if pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("dnsPolicy %q, want ClusterFirstWithHostNet with hostNetwork", pod.DNSPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not false: the server needs no API access")
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 5 {
		t.Errorf("terminationGracePeriodSeconds %v: the server needs up to 5 s to end running tests", g)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != imageUID {
		t.Errorf("pod securityContext must set runAsNonRoot and runAsUser %d (the image's USER)", imageUID)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod securityContext has no RuntimeDefault seccomp profile")
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image == "" {
		t.Error("the container has no image")
	}
	if len(c.Command) != 0 {
		t.Errorf("command %v overrides the image's ENTRYPOINT /usr/bin/udpstp", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "server" {
		t.Errorf("args %v, want the server command first", c.Args)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("the container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("the container is privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}

	// The CPU limit becomes cpu.max, which sizes the Engine Thread pool:
	// it must be there, and the requests must fit within the limits.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, ok := c.Resources.Limits[r]
		if !ok {
			t.Errorf("no %s limit", r)
			continue
		}
		if req, ok := c.Resources.Requests[r]; ok && req.Cmp(lim) > 0 {
			t.Errorf("%s request %s above its limit %s", r, req.String(), lim.String())
		}
	}
	if cpu := c.Resources.Limits[corev1.ResourceCPU]; cpu.MilliValue() < 1000 {
		t.Errorf("cpu limit %s: under one CPU the one Engine Thread is throttled mid-test", cpu.String())
	}

	// Ports: the control port, UDP, as udpstp.socket has it; port names
	// as the API server requires them.
	var control bool
	for _, p := range c.Ports {
		for _, e := range validation.IsValidPortName(p.Name) {
			t.Errorf("port name %q: %s", p.Name, e)
		}
		if p.HostPort != 0 && p.HostPort != p.ContainerPort {
			t.Errorf("port %s: hostPort %d differs from containerPort %d (with hostNetwork they must be equal)", p.Name, p.HostPort, p.ContainerPort)
		}
		if p.ContainerPort == controlPort(t) && p.Protocol == corev1.ProtocolUDP {
			control = true
		}
	}
	if !control {
		t.Errorf("no UDP port %d (the control port of udpstp.socket)", controlPort(t))
	}

	// The only writable place is the state directory, and it is a volume.
	var state bool
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == "/var/lib/udpstp" {
			state = slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		}
	}
	if !state {
		t.Error("no volume mounted on /var/lib/udpstp (-G files on a read-only root file system)")
	}

	// HOST_IP is the node's address, for --metrics-listen once it exists.
	hostIP := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	})
	if !hostIP {
		t.Error("no HOST_IP from status.hostIP")
	}
}

func TestManifestMetricsService(t *testing.T) {
	m := loadManifest(t)
	svc := m.svc
	checkMeta(t, "Service", svc.ObjectMeta, true)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s has clusterIP %q, want None (headless: DNS gives every pod's address)", svc.Name, svc.Spec.ClusterIP)
	}
	// An empty selector would select every pod of the namespace.
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(m.ds.Spec.Template.Labels)) {
		t.Errorf("Service selector %v does not select the DaemonSet's pods %v", svc.Spec.Selector, m.ds.Spec.Template.Labels)
	}
	p, ok := metricsPort(m)
	if !ok {
		t.Fatal("the container has no port named metrics")
	}
	var found bool
	for _, sp := range svc.Spec.Ports {
		if sp.TargetPort.String() == p.Name || sp.TargetPort.IntValue() == int(p.ContainerPort) {
			found = true
			if sp.Port != p.ContainerPort {
				t.Errorf("Service port %d, container port %d: with hostNetwork clients of the pod address use the container's", sp.Port, p.ContainerPort)
			}
		}
	}
	if !found {
		t.Errorf("Service %s does not target the container port %s", svc.Name, p.Name)
	}
}

// metricsPort is the container port reserved for --metrics-listen.
func metricsPort(m manifest) (corev1.ContainerPort, bool) {
	for _, p := range m.ds.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			return p, p.Protocol == corev1.ProtocolTCP
		}
	}
	return corev1.ContainerPort{}, false
}
