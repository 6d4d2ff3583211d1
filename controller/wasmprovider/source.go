package wasmprovider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refusal is a version the reconciler itself refused before the registry
// saw it (a bad spec, a source it could not read, a digest mismatch), in
// the registry's terms: the stage and the condition reason.
type refusal struct {
	stage  registry.Stage // "" for a spec refused before any fetch
	reason string
	err    error
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

func invalidSpec(format string, args ...any) error {
	return &refusal{reason: wasmprovv1alpha1.ReasonInvalidSpec, err: fmt.Errorf(format, args...)}
}

func pullFailed(err error) error {
	return &refusal{stage: registry.StagePull, reason: wasmprovv1alpha1.ReasonPullFailed, err: err}
}

// policyOf decodes spec.policy strictly and applies spec.pool over it.
func policyOf(spec *wasmprovv1alpha1.WasmProviderSpec) (*runtime.Policy, error) {
	var p runtime.Policy
	if spec.Policy != nil && len(spec.Policy.Raw) > 0 {
		var err error
		if p, err = runtime.ParsePolicy(spec.Policy.Raw); err != nil {
			return nil, invalidSpec("spec.policy: %w", err)
		}
	}
	if pool := spec.Pool; pool != nil {
		if pool.Size < 0 || pool.Prewarm < 0 || pool.MaxCallsPerInstance < -1 {
			return nil, invalidSpec("spec.pool: size and prewarm must not be negative, maxCallsPerInstance not below -1")
		}
		if pool.Size != 0 {
			p.PoolSize = int(pool.Size)
		}
		if pool.Prewarm != 0 {
			p.Prewarm = int(pool.Prewarm)
		}
		if pool.MaxCallsPerInstance != 0 {
			p.MaxCallsPerInstance = int(pool.MaxCallsPerInstance)
		}
		if pool.IdleTimeout != nil {
			if pool.IdleTimeout.Duration < 0 {
				return nil, invalidSpec("spec.pool.idleTimeout: must not be negative")
			}
			p.IdleTimeout = runtime.Duration(pool.IdleTimeout.Duration)
		}
	}
	if spec.Policy == nil && spec.Pool == nil {
		return nil, nil
	}
	return &p, nil
}

// sourceRef is the source as status names it: the image reference, the
// ConfigMap's namespace/name/key, or the URL.
func sourceRef(src *wasmprovv1alpha1.Source) string {
	switch {
	case src.Image != nil:
		return src.Image.Ref
	case src.ConfigMap != nil:
		return src.ConfigMap.Namespace + "/" + src.ConfigMap.Name + "/" + src.ConfigMap.Key
	case src.URL != nil:
		return src.URL.URL
	}
	return ""
}

// checkSource refuses a spec whose source is not exactly one of its
// fields, or whose fields cannot be right, before anything is fetched.
func checkSource(spec *wasmprovv1alpha1.WasmProviderSpec) error {
	n := 0
	for _, set := range []bool{spec.Source.Image != nil, spec.Source.ConfigMap != nil, spec.Source.URL != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalidSpec("spec.source: exactly one of image, configMap and url must be set (%d are)", n)
	}
	if spec.Verify != nil && len(spec.Verify.Raw) > 0 && spec.Source.Image == nil {
		return invalidSpec("spec.verify applies to an image source only")
	}
	switch src := spec.Source; {
	case src.Image != nil:
		if src.Image.Ref == "" {
			return invalidSpec("spec.source.image.ref is empty")
		}
		switch src.Image.PullPolicy {
		case "", wasmprovv1alpha1.PullAlways, wasmprovv1alpha1.PullIfNotPresent:
		default:
			return invalidSpec("spec.source.image.pullPolicy %q: want Always or IfNotPresent", src.Image.PullPolicy)
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.Name == "" || src.ConfigMap.Namespace == "" || src.ConfigMap.Key == "" {
			return invalidSpec("spec.source.configMap: namespace, name and key are required")
		}
		if _, err := hexSHA256(src.ConfigMap.SHA256); err != nil {
			return invalidSpec("spec.source.configMap.sha256: %w", err)
		}
	case src.URL != nil:
		if _, err := hexSHA256(src.URL.SHA256); err != nil {
			return invalidSpec("spec.source.url.sha256: %w", err)
		}
		if err := checkURL(src.URL.URL); err != nil {
			return invalidSpec("spec.source.url: %w", err)
		}
	}
	return nil
}

// hexSHA256 normalises a sha256 given as hex (an optional "sha256:"
// prefix is accepted).
func hexSHA256(s string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	if len(h) != 64 {
		return "", errors.New("want 64 hexadecimal digits")
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", errors.New("want 64 hexadecimal digits")
	}
	return h, nil
}

// checkURL allows https, and http to a loopback host only: a module
// fetched in clear from elsewhere could be swapped on the way (the sha256
// would refuse it, but it would still be a pull from an untrusted path).
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	if u.User != nil {
		return errors.New("credentials in the URL are not allowed")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("http:// only to a loopback host, not %q", host)
	}
	return fmt.Errorf("scheme %q: want https (or http to a loopback host)", u.Scheme)
}

// dockerConfig reads an image source's pull Secret: a
// kubernetes.io/dockerconfigjson Secret's .dockerconfigjson; nil without one.
func (r *Reconciler) dockerConfig(ctx context.Context, img *wasmprovv1alpha1.ImageSource) ([]byte, error) {
	ps := img.PullSecret
	if ps == nil {
		return nil, nil
	}
	if ps.Name == "" || ps.Namespace == "" {
		return nil, invalidSpec("spec.source.image.pullSecret: namespace and name are required (a WasmProvider is cluster scoped)")
	}
	s, err := r.opts.Kube.CoreV1().Secrets(ps.Namespace).Get(ctx, ps.Name, metav1.GetOptions{})
	if err != nil {
		return nil, pullFailed(fmt.Errorf("reading pull secret %s/%s: %w", ps.Namespace, ps.Name, err))
	}
	if s.Type != corev1.SecretTypeDockerConfigJson {
		return nil, pullFailed(fmt.Errorf("pull secret %s/%s has type %q, want %s", ps.Namespace, ps.Name, s.Type, corev1.SecretTypeDockerConfigJson))
	}
	b, ok := s.Data[corev1.DockerConfigJsonKey]
	if !ok || len(b) == 0 {
		return nil, pullFailed(fmt.Errorf("pull secret %s/%s has no %s", ps.Namespace, ps.Name, corev1.DockerConfigJsonKey))
	}
	return b, nil
}

// configMapModule reads a ConfigMap source and checks its digest.
func (r *Reconciler) configMapModule(ctx context.Context, src *wasmprovv1alpha1.ConfigMapSource) ([]byte, error) {
	cm, err := r.opts.Kube.CoreV1().ConfigMaps(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if err != nil {
		return nil, pullFailed(fmt.Errorf("reading ConfigMap %s/%s: %w", src.Namespace, src.Name, err))
	}
	b, ok := cm.BinaryData[src.Key]
	if !ok {
		return nil, pullFailed(fmt.Errorf("ConfigMap %s/%s has no binaryData key %q", src.Namespace, src.Name, src.Key))
	}
	if int64(len(b)) > r.opts.MaxModuleBytes {
		return nil, pullFailed(fmt.Errorf("ConfigMap %s/%s key %q: module of %d bytes exceeds the limit of %d", src.Namespace, src.Name, src.Key, len(b), r.opts.MaxModuleBytes))
	}
	return b, checkDigest(b, src.SHA256)
}

// urlModule fetches a URL source, at most MaxModuleBytes, and checks its
// digest.
func (r *Reconciler) urlModule(ctx context.Context, src *wasmprovv1alpha1.URLSource) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, invalidSpec("spec.source.url: %w", err)
	}
	resp, err := r.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, pullFailed(fmt.Errorf("fetching %s: %w", src.URL, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, pullFailed(fmt.Errorf("fetching %s: %s", src.URL, resp.Status))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxModuleBytes+1))
	if err != nil {
		return nil, pullFailed(fmt.Errorf("fetching %s: %w", src.URL, err))
	}
	if int64(len(b)) > r.opts.MaxModuleBytes {
		return nil, pullFailed(fmt.Errorf("fetching %s: the module exceeds the limit of %d bytes", src.URL, r.opts.MaxModuleBytes))
	}
	return b, checkDigest(b, src.SHA256)
}

func checkDigest(b []byte, want string) error {
	w, err := hexSHA256(want)
	if err != nil {
		return invalidSpec("sha256: %w", err)
	}
	s := sha256.Sum256(b)
	if got := hex.EncodeToString(s[:]); got != w {
		return &refusal{stage: registry.StagePull, reason: wasmprovv1alpha1.ReasonDigestMismatch,
			err: fmt.Errorf("module digest sha256:%s does not match the spec's sha256:%s", got, w)}
	}
	return nil
}
