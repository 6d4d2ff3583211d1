//go:build nokube

package main

import (
	"errors"
	"flag"

	"k8s.io/client-go/kubernetes"
)

// This file replaces kube.go in a build with -tags nokube (`make
// cli-lite`), which also leaves out the controller command. kube.go's
// clients cost most of the full binary: client-go's fake clientset, which
// serves --secret-file and --configmap-file, registers every API group of
// Kubernetes (about 23 MB of the 113), and the kubeconfig loader and real
// clientset of --kubeconfig most of the rest of the 40 MB the tag saves.
// The flags stay, so that a command line written for the full binary
// fails saying why rather than with "flag provided but not defined".

// errNoKube is what the lite build says when asked for a Kubernetes client.
var errNoKube = errors.New("this wasmprov was built with -tags nokube (make cli-lite): --kubeconfig, --secret-file and --configmap-file need the full build (make cli)")

// kubeFlags are kube.go's flags, accepted and refused when used.
type kubeFlags struct {
	kubeconfig                  string
	secretFiles, configMapFiles listFlag
}

func addKubeFlags(fs *flag.FlagSet) *kubeFlags {
	k := &kubeFlags{}
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "not in this build (-tags nokube): read the Machine's Secrets and ConfigMaps from a cluster")
	fs.Var(&k.secretFiles, "secret-file", "not in this build (-tags nokube): Secret manifests to resolve secretKeyRef values from")
	fs.Var(&k.configMapFiles, "configmap-file", "not in this build (-tags nokube): ConfigMap manifests to resolve configMapKeyRef values from")
	return k
}

// client returns no client when none is asked for (references then fail
// with the host's "no Kubernetes client", as in the full build), and
// errNoKube when one is.
func (k *kubeFlags) client() (kubernetes.Interface, error) {
	if k.kubeconfig != "" || len(k.secretFiles)+len(k.configMapFiles) > 0 {
		return nil, errNoKube
	}
	return nil, nil
}
