//go:build nokube

package main

import (
	"errors"
	"flag"

	"k8s.io/client-go/kubernetes"
)

// This file replaces kube.go in a build with -tags nokube (`make
// cli-lite`), which also leaves out the controller command. kube.go's
// clients are most of what the tag saves (41 of the full binary's 113 MB):
// client-go's fake clientset behind --secret-file and --configmap-file,
// with a fake client for every Kubernetes API group, is 23 MB alone; the
// kubeconfig loader and clientset of --kubeconfig most of the rest.
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
