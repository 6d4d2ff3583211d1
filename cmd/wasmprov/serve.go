package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

func init() {
	register("serve", "serve a directory of providers with hot reload: wasmprov serve --dir DIR", runServe)
}

// serveLogOutput is where serve logs (a variable for tests).
var serveLogOutput io.Writer = os.Stderr

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fs.String("dir", "", "provider directory: NAME.wasm with an optional NAME.yaml policy each, or NAME.provider.yaml image entries (required)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	debounce := fs.Duration("debounce", 150*time.Millisecond, "how long a changed file must stay quiet before it is loaded")
	smokeTimeout := fs.Duration("smoke-timeout", 10*time.Second, "bound on a new version's smoke call")
	images := addImageFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: wasmprov serve --dir DIR [flags]\n\n"+
			"Loads every provider in DIR, reloads them when their files change, and serves\n"+
			"  /metrics  Prometheus metrics\n"+
			"  /healthz  200 while the process runs\n"+
			"  /readyz   200 once the directory is loaded and watched and every provider in it serves\n"+
			"            (503 naming those that do not; stale ones serve their last known good)\n"+
			"  GET  /v1/providers                  the providers' status\n"+
			"  POST /v1/providers/NAME/METHOD      call a method (404: no such provider; 503: it failed to load); body {\"machine\": {...}, \"spec\": {...}, \"userdata\": \"\", \"newUID\": \"\"}\n"+
			"                                      (SetMetricsForMachines: {\"machines\": {\"items\": [...]}}; /metrics then shows what\n"+
			"                                      the provider reported, as wasmprov_guest_NAME_*)\n"+
			"  POST /v1/providers/NAME/reload      reload one provider now\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--dir is required and takes no positional arguments")
	}
	logger, err := newLogger(serveLogOutput, *logFormat, *logLevel)
	if err != nil {
		return err
	}

	collector := metrics.New()
	opts := []runtime.Option{engineOption(), runtime.WithLogger(logger), runtime.WithCallObserver(collector.ObserveCall)}
	if *cacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(*cacheDir))
	}
	rt, err := runtime.New(opts...)
	if err != nil {
		return err
	}
	clients, err := newOCIClients(images, logger)
	if err != nil {
		_ = rt.Close(ctx)
		return err
	}
	imageOpts, err := clients.registryOptions(images, logger)
	if err != nil {
		_ = rt.Close(ctx)
		return err
	}
	reg := registry.New(rt, append([]registry.Option{registry.WithLogger(logger), registry.WithDebounce(*debounce),
		registry.WithSmokeTimeout(*smokeTimeout)}, imageOpts...)...)
	collector.SetRegistry(reg)
	s := &server{reg: reg, logger: logger, collector: collector}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := reg.Close(cctx); err != nil {
			logger.Warn("closing providers", "error", err)
		}
		_ = rt.Close(cctx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "dir", *dir)

	// Load, then watch. A provider that fails to load does not stop the
	// others (nor the server): it is logged and reported by /readyz.
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		_ = httpSrv.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a directory", *dir)
		}
		return fmt.Errorf("provider directory: %w", err)
	}
	if err := reg.LoadDir(ctx, *dir); err != nil {
		logger.Error("some providers failed to load; the others serve", "error", err)
	}
	if err := reg.Watch(ctx); err != nil {
		_ = httpSrv.Close()
		return err
	}
	s.ready.Store(true)
	logger.Info("ready", "providers", reg.Names())

	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return httpSrv.Shutdown(sctx)
}

// writeReadiness answers /readyz: ready (200) once the directory is
// loaded and watched and while every provider it configures serves a
// version; a provider that serves nothing (it failed to load, and had
// no last known good) makes it 503, named in notServing. A stale
// provider — the last known good, its registry unreachable — serves,
// so it is ready, and is named in stale.
func writeReadiness(w http.ResponseWriter, loaded bool, status []registry.Status) {
	notServing, stale := []string{}, []string{}
	for _, st := range status {
		switch {
		case !st.Serving && st.Draining == 0:
			notServing = append(notServing, st.Name)
		case st.Stale:
			stale = append(stale, st.Name)
		}
	}
	ready := loaded && len(notServing) == 0
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"ready": ready, "loaded": loaded, "notServing": notServing, "stale": stale, "providers": status})
}

// newLogger returns a slog logger writing text or JSON to w.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

type server struct {
	reg       *registry.Registry
	logger    *slog.Logger
	collector *metrics.Collector
	ready     atomic.Bool
}

func (s *server) handler() http.Handler {
	pr := prometheus.NewRegistry()
	// serve has no Machines of its own, so it never calls
	// SetMetricsForMachines by itself: the guest metrics on /metrics are
	// what each provider reported to the last such call through the API.
	pr.MustRegister(s.collector, s.collector.GuestCollector(s.logger),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(pr, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		writeReadiness(w, s.ready.Load(), s.reg.Status())
	})
	mux.HandleFunc("GET /v1/providers", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.reg.Status())
	})
	mux.HandleFunc("POST /v1/providers/{name}/reload", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := s.reg.Reload(r.Context(), name); err != nil {
			code := http.StatusUnprocessableEntity
			if errors.Is(err, registry.ErrProviderNotFound) {
				code = http.StatusNotFound
			}
			writeJSON(w, code, map[string]any{"error": err.Error()})
			return
		}
		h, err := s.reg.Get(name)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"provider": name, "sha256": h.SHA256()})
	})
	mux.HandleFunc("POST /v1/providers/{name}/{method}", s.call)
	return mux
}

// callRequest is the body of a method call.
type callRequest struct {
	Machine  *clusterv1alpha1.Machine     `json:"machine,omitempty"`
	Spec     *clusterv1alpha1.MachineSpec `json:"spec,omitempty"`
	Userdata string                       `json:"userdata,omitempty"`
	NewUID   string                       `json:"newUID,omitempty"`
	// Machines is SetMetricsForMachines' argument.
	Machines *clusterv1alpha1.MachineList `json:"machines,omitempty"`
}

func (s *server) call(w http.ResponseWriter, r *http.Request) {
	name, method := r.PathValue("name"), r.PathValue("method")
	var req callRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "decoding request: " + err.Error()})
		return
	}
	if req.Machine == nil {
		req.Machine = &clusterv1alpha1.Machine{}
	}
	if req.Spec == nil {
		req.Spec = &req.Machine.Spec
	}
	h, err := s.reg.Get(name)
	if err != nil {
		// Configured but failed to load is the server's trouble, for now
		// (503, with the reason); a name nobody configured is the
		// caller's (404).
		code := http.StatusNotFound
		if errors.Is(err, registry.ErrNotServing) {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"error": err.Error()})
		return
	}
	ctx := r.Context()
	if t := r.URL.Query().Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "timeout: " + err.Error()})
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	ctx = provider.WithMachineNamespace(ctx, req.Machine.Namespace)
	p := h
	var result any
	switch strings.ToLower(method) {
	case "adddefaults":
		result, err = p.AddDefaults(ctx, *req.Spec, nil)
	case "validate":
		err = p.Validate(ctx, *req.Spec, nil)
	case "get":
		inst, gerr := p.Get(ctx, req.Machine, nil)
		if err = gerr; err == nil {
			result = instanceMap(inst)
		}
	case "getcloudconfig":
		cfg, cname, gerr := p.GetCloudConfig(ctx, *req.Spec, nil)
		result, err = map[string]string{"config": cfg, "name": cname}, gerr
	case "create":
		inst, cerr := p.Create(ctx, req.Machine, nil, req.Userdata)
		if err = cerr; err == nil {
			result = instanceMap(inst)
		}
	case "delete":
		// The seed's Delete: an unfinished deletion is an error wrapping
		// provider.ErrDeletionInProgress, call again.
		err = cloud.SeedProvider(p, func() context.Context { return ctx }).Delete(req.Machine, nil)
	case "machinemetricslabels":
		result, err = p.MachineMetricsLabels(ctx, req.Machine, nil)
	case "migrateuid":
		err = p.MigrateUID(ctx, req.Machine, types.UID(req.NewUID), nil)
	case "setmetricsformachines":
		var list clusterv1alpha1.MachineList
		if req.Machines != nil {
			list = *req.Machines
		}
		// The result is the samples as the runtime stored them (none if
		// it refused the answer), without the /metrics name prefix.
		if err = p.SetMetricsForMachines(ctx, list, nil); err == nil {
			result = map[string]any{"metrics": h.MetricSamples(), "prefix": runtime.MetricNamePrefix(name)}
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("unknown method %q; want one of %s", method,
			strings.Join(append(methodNames(), "SetMetricsForMachines"), ", "))})
		return
	}
	resp := map[string]any{"provider": name, "method": method, "sha256": h.SHA256()}
	if err != nil {
		resp["error"] = err.Error()
		resp["class"] = string(runtime.ErrorClass(err))
		if ok, reason, _ := cloudprovidererrors.IsTerminalError(err); ok {
			resp["terminal"], resp["reason"] = true, string(reason)
		}
		// The provider answered: the HTTP exchange worked, the call failed.
		writeJSON(w, http.StatusUnprocessableEntity, resp)
		return
	}
	resp["result"] = result
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
