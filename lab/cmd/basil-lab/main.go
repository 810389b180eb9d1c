// Command basil-lab serves a simulated vCenter whose storage answers to load: the vSphere SOAP API
// (/sdk), the Automation API (/api, /rest) and the lab's control API (/lab/) on one loopback
// listener, for a scenario file.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/basil-project/basil/lab/internal/control"
	"github.com/basil-project/basil/lab/internal/scenario"
	"github.com/basil-project/basil/lab/internal/vc"
)

// Default credentials of the lab; override with --user/--password or BASIL_LAB_USER and
// BASIL_LAB_PASSWORD.
const (
	defaultUser     = "administrator@vsphere.local"
	defaultPassword = "basil-lab"
)

type config struct {
	scenario, listen   string
	speed, copyMBps    float64
	tls                bool
	cert, key, certOut string
	user, password     string
	capRealtime        bool
	stock              bool
	start              time.Time // simulated time at the first load; zero: now
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "basil-lab:", err)
		return 2
	}
	var data []byte
	var sc *scenario.Scenario
	if !cfg.stock {
		data, err = os.ReadFile(cfg.scenario)
		if err != nil {
			fmt.Fprintln(os.Stderr, "basil-lab:", err)
			return 2
		}
		sc, err = scenario.Parse(data, cfg.scenario)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if err := checkLoopback(cfg.listen); err != nil {
		fmt.Fprintln(os.Stderr, "basil-lab:", err)
		return 2
	}
	var tlsConfig *tls.Config
	var certDER []byte
	if cfg.tls {
		tlsConfig, certDER, err = loadOrMakeCertificate(cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "basil-lab:", err)
			return 1
		}
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "basil-lab:", err)
		return 1
	}
	scheme := "http"
	if cfg.tls {
		scheme = "https"
	}
	public := &url.URL{Scheme: scheme, Host: ln.Addr().String()}
	var handler http.Handler
	var closeFront func()
	if cfg.stock {
		stock, err := vc.NewStock(public, tlsConfig)
		if err != nil {
			_ = ln.Close()
			fmt.Fprintln(os.Stderr, "basil-lab:", err)
			return 1
		}
		front := control.NewStock(stock, control.Credentials{User: cfg.user, Password: cfg.password})
		handler, closeFront = front, front.Close
		fmt.Println("basil-lab: stock govmomi simulator model (vcsim's default inventory), any user and password")
	} else {
		front, code := startScenario(cfg, sc, data, public, tlsConfig)
		if front == nil {
			_ = ln.Close()
			return code
		}
		handler, closeFront = front, front.Close
	}
	fmt.Printf("basil-lab: url %s://%s/sdk\n", scheme, public.Host)
	if certDER != nil {
		s1, s256 := sha1.Sum(certDER), sha256.Sum256(certDER)
		fmt.Printf("basil-lab: thumbprint sha1 %s\n", thumbprint(s1[:]))
		fmt.Printf("basil-lab: thumbprint sha256 %s\n", thumbprint(s256[:]))
		if cfg.certOut != "" {
			fmt.Printf("basil-lab: certificate %s\n", cfg.certOut)
		}
	}
	fmt.Printf("basil-lab: user %s\n", cfg.user)
	fmt.Printf("basil-lab: control %s://%s/lab/\n", scheme, public.Host)
	fmt.Printf("basil-lab: speed %g\n", cfg.speed)

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- srv.Serve(tls.NewListener(ln, tlsConfig))
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	fmt.Println("basil-lab: ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	code := 0
	select {
	case s := <-sig:
		fmt.Printf("basil-lab: %v, stopping\n", s)
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "basil-lab:", err)
		code = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	closeFront()
	return code
}

// startScenario builds the lab for the scenario and its control front; nil and an exit code when
// it cannot.
func startScenario(cfg *config, sc *scenario.Scenario, data []byte, public *url.URL, tlsConfig *tls.Config) (*control.Front, int) {
	first := cfg.start // --start applies to the first load only; a reload starts at now
	factory := func(s *scenario.Scenario, speed float64) (*vc.Lab, error) {
		at := first
		first = time.Time{}
		return vc.New(s, vc.Options{
			User: cfg.user, Password: cfg.password, Speed: speed, PublicURL: public, TLS: tlsConfig,
			CopyMBps: cfg.copyMBps, CapRealtimeQueries: cfg.capRealtime, Start: at,
		})
	}
	start := time.Now()
	lab, err := factory(sc, cfg.speed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "basil-lab:", err)
		return nil, 1
	}
	front := control.New(lab, data, cfg.scenario, factory, control.Credentials{User: cfg.user, Password: cfg.password})
	disks := 0
	for _, v := range sc.VMs {
		disks += len(v.Disks)
	}
	fmt.Printf("basil-lab: scenario %q from %s: %d hosts, %d datastores, %d VMs, %d disks, built in %.2fs\n",
		sc.Name, cfg.scenario, len(sc.Hosts), len(sc.Datastores), len(sc.VMs), disks, time.Since(start).Seconds())
	return front, 0
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("basil-lab", flag.ContinueOnError)
	fs.StringVar(&cfg.scenario, "scenario", "", "scenario YAML file (required unless --stock)")
	fs.BoolVar(&cfg.stock, "stock", false, "serve govmomi's stock simulator model (vcsim's default inventory) instead of a scenario")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8989", "loopback address to listen on (port 0 picks a free port)")
	fs.Float64Var(&cfg.speed, "speed", 1, "pace of simulated time: 1 real time, 60 = one 20 s interval per third of a second, 0 paused")
	fs.BoolVar(&cfg.tls, "tls", false, "serve HTTPS")
	fs.StringVar(&cfg.cert, "cert", "", "TLS certificate (PEM); a self-signed one is generated when omitted")
	fs.StringVar(&cfg.key, "key", "", "TLS private key (PEM) of --cert")
	fs.StringVar(&cfg.certOut, "cert-out", "", "write the generated certificate (PEM) here, for clients to verify it")
	fs.StringVar(&cfg.user, "user", envOr("BASIL_LAB_USER", defaultUser), "the one user that may log in (env BASIL_LAB_USER)")
	fs.StringVar(&cfg.password, "password", envOr("BASIL_LAB_PASSWORD", defaultPassword), "its password (env BASIL_LAB_PASSWORD)")
	fs.Float64Var(&cfg.copyMBps, "svmotion-mbps", 200, "Storage vMotion copy rate in MB/s")
	fs.BoolVar(&cfg.capRealtime, "cap-realtime-queries", false, "apply config.vpxd.stats.maxQueryMetrics to real-time queries too (vCenter caps historical ones only)")
	start := fs.String("start", "", "simulated time at start, RFC 3339 (default now); a restart goes on where a previous run's clock stopped")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var problems []string
	if *start != "" {
		at, err := time.Parse(time.RFC3339, *start)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--start: %q is not an RFC 3339 time (2026-01-02T15:04:05Z)", *start))
		}
		cfg.start = at
	}
	if cfg.scenario == "" && !cfg.stock {
		problems = append(problems, "--scenario: is required (or --stock)")
	}
	if cfg.scenario != "" && cfg.stock {
		problems = append(problems, "--stock: serves govmomi's stock model, so takes no --scenario")
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	if (cfg.cert == "") != (cfg.key == "") {
		problems = append(problems, "--cert and --key: give both or neither")
	}
	if cfg.cert != "" && !cfg.tls {
		problems = append(problems, "--cert: needs --tls")
	}
	if cfg.certOut != "" && (!cfg.tls || cfg.cert != "") {
		problems = append(problems, "--cert-out: writes the generated certificate, so needs --tls without --cert")
	}
	if cfg.user == "" || cfg.password == "" {
		problems = append(problems, "--user and --password: must not be empty")
	}
	if cfg.copyMBps <= 0 {
		problems = append(problems, "--svmotion-mbps: must be positive")
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return cfg, nil
}

func envOr(key, dflt string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return dflt
}

// checkLoopback refuses to serve anywhere but on the loopback interface: the lab is a test
// harness with a well-known password.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen: %v", err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen: the lab serves on loopback only (127.0.0.1, ::1 or localhost), got %q", host)
}

func thumbprint(sum []byte) string {
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// loadOrMakeCertificate loads --cert/--key or makes a self-signed certificate for the loopback
// names, and returns the TLS configuration and the certificate (DER).
func loadOrMakeCertificate(cfg *config) (*tls.Config, []byte, error) {
	var cert tls.Certificate
	var err error
	if cfg.cert != "" {
		cert, err = tls.LoadX509KeyPair(cfg.cert, cfg.key)
		if err != nil {
			return nil, nil, fmt.Errorf("--cert/--key: %v", err)
		}
	} else {
		cert, err = selfSigned()
		if err != nil {
			return nil, nil, err
		}
		if cfg.certOut != "" {
			pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
			if err := os.WriteFile(cfg.certOut, pemBytes, 0o644); err != nil {
				return nil, nil, fmt.Errorf("--cert-out: %v", err)
			}
		}
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	cert.Leaf = leaf
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// As the simulator does: a client certificate, when offered, serves LoginExtensionByCertificate.
		ClientAuth: tls.RequestClientCert,
	}, cert.Certificate[0], nil
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	skid := sha1.Sum(elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "basil-lab", Organization: []string{"Basil lab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          skid[:],
		AuthorityKeyId:        skid[:],
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
