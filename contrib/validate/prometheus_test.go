package validate

import (
	"net"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"
)

// scrapeConfig is the part of a Prometheus configuration that this test
// relies on. promtool (make deploy-check) validates the whole file; this
// test checks that it points where the manifest says the endpoint will be.
type scrapeConfig struct {
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs"`
		DNSSDConfigs []struct {
			Names []string `json:"names"`
			Type  string   `json:"type"`
			Port  int32    `json:"port"`
		} `json:"dns_sd_configs"`
	} `json:"scrape_configs"`
}

func TestScrapeConfigMatchesManifest(t *testing.T) {
	var cfg scrapeConfig
	if err := yaml.Unmarshal([]byte(readFile(t, scrapePath)), &cfg); err != nil {
		t.Fatalf("%s: %v", scrapePath, err)
	}
	m := loadManifest(t)
	port, ok := metricsPort(m)
	if !ok {
		t.Fatal("the manifest has no TCP container port named metrics")
	}
	svcName := m.svc.Name + "." + m.svc.Namespace + ".svc.cluster.local"

	var static, dns bool
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "/metrics" {
			t.Errorf("job %s: metrics_path %q, want /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, s := range sc.StaticConfigs {
			for _, target := range s.Targets {
				static = true
				_, p, err := net.SplitHostPort(target)
				if err != nil || p != strconv.Itoa(int(port.ContainerPort)) {
					t.Errorf("job %s: target %s, want port %d (the manifest's metrics port)", sc.JobName, target, port.ContainerPort)
				}
			}
		}
		for _, d := range sc.DNSSDConfigs {
			dns = true
			if len(d.Names) != 1 || d.Names[0] != svcName || d.Port != port.ContainerPort {
				t.Errorf("job %s: dns_sd %v port %d, want %s port %d (the manifest's headless Service)", sc.JobName, d.Names, d.Port, svcName, port.ContainerPort)
			}
			if d.Type != "A" && d.Type != "AAAA" {
				t.Errorf("job %s: dns_sd type %q: a headless Service has A/AAAA records", sc.JobName, d.Type)
			}
		}
	}
	if !static || !dns {
		t.Errorf("want a static job (systemd hosts) and a DNS job (the DaemonSet); static %v, dns %v", static, dns)
	}
}
