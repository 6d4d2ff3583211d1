//go:build !nokube

package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// kubeFlags give a command the Kubernetes client a Machine's secretKeyRef
// and configMapKeyRef values are resolved through: a cluster's, read-only,
// or offline, one preloaded with Secret and ConfigMap manifests. Which
// references may be resolved is the host's rule (config_var: only what the
// Machine references, in its namespace unless the policy allows others),
// not the CLI's: the CLI only supplies the client.
type kubeFlags struct {
	kubeconfig                  string
	secretFiles, configMapFiles listFlag
}

func addKubeFlags(fs *flag.FlagSet) *kubeFlags {
	k := &kubeFlags{}
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "read the Secrets and ConfigMaps the Machine references from the current context's cluster of this kubeconfig (read-only)")
	fs.Var(&k.secretFiles, "secret-file", "offline: Secret manifests (YAML or JSON, several documents allowed; no namespace means \"default\") to resolve secretKeyRef values from (repeatable)")
	fs.Var(&k.configMapFiles, "configmap-file", "offline: ConfigMap manifests, as --secret-file, for configMapKeyRef values (repeatable)")
	return k
}

// client returns the client the flags ask for, or nil when they ask for
// none (references then fail with the host's "no Kubernetes client").
func (k *kubeFlags) client() (kubernetes.Interface, error) {
	offline := len(k.secretFiles)+len(k.configMapFiles) > 0
	switch {
	case k.kubeconfig != "" && offline:
		return nil, errors.New("--kubeconfig and --secret-file/--configmap-file exclude each other: resolve from a cluster or from files")
	case k.kubeconfig != "":
		return clusterClient(k.kubeconfig)
	case offline:
		return k.fileClient()
	}
	return nil, nil
}

// clusterClient is a client of the current context's cluster that can only
// read: a command run to try a provider must not write to a cluster.
func clusterClient(path string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readOnly{rt} })
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// readOnly refuses every request that is not a read.
type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return nil, fmt.Errorf("wasmprov only reads from the cluster: refusing %s %s", req.Method, req.URL.Path)
	}
	return r.next.RoundTrip(req)
}

// fileClient is client-go's fake clientset holding the objects of the
// manifest files.
func (k *kubeFlags) fileClient() (kubernetes.Interface, error) {
	var objs []kruntime.Object
	seen := map[string]string{} // kind/namespace/name -> file
	add := func(path, kind, ns, name string, obj kruntime.Object) error {
		key := kind + " " + ns + "/" + name
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("%s: %s is also in %s", path, key, prev)
		}
		seen[key] = path
		objs = append(objs, obj)
		return nil
	}
	for _, path := range k.secretFiles {
		docs, err := manifestDocuments(path, "Secret")
		if err != nil {
			return nil, fmt.Errorf("--secret-file %w", err)
		}
		for i, doc := range docs {
			s := new(corev1.Secret)
			if err := yaml.UnmarshalStrict(doc, s); err != nil {
				return nil, fmt.Errorf("--secret-file %s: document %d is not a valid Secret: %w", path, i+1, err)
			}
			defaultNamespace(&s.ObjectMeta)
			// The API server folds stringData into data; the fake
			// clientset does not, and the host reads data.
			for key, v := range s.StringData {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[key] = []byte(v)
			}
			s.StringData = nil
			if err := add(path, "Secret", s.Namespace, s.Name, s); err != nil {
				return nil, err
			}
		}
	}
	for _, path := range k.configMapFiles {
		docs, err := manifestDocuments(path, "ConfigMap")
		if err != nil {
			return nil, fmt.Errorf("--configmap-file %w", err)
		}
		for i, doc := range docs {
			cm := new(corev1.ConfigMap)
			if err := yaml.UnmarshalStrict(doc, cm); err != nil {
				return nil, fmt.Errorf("--configmap-file %s: document %d is not a valid ConfigMap: %w", path, i+1, err)
			}
			defaultNamespace(&cm.ObjectMeta)
			if err := add(path, "ConfigMap", cm.Namespace, cm.Name, cm); err != nil {
				return nil, err
			}
		}
	}
	return fake.NewClientset(objs...), nil
}

func defaultNamespace(m *metav1.ObjectMeta) {
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
}

// manifestDocuments splits the file at path into its YAML documents (a
// JSON file is one), drops the empty ones, and checks that each is of
// kind want and has a name.
func manifestDocuments(path, want string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "" {
			continue // a comment, or nothing between two ---
		}
		var meta struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(j, &meta); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if meta.Kind != want {
			return nil, fmt.Errorf("%s: document %d has kind %q, want %s", path, n, meta.Kind, want)
		}
		if meta.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: document %d: the %s has no metadata.name", path, n, want)
		}
		docs = append(docs, j)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s holds no %s", path, want)
	}
	return docs, nil
}
