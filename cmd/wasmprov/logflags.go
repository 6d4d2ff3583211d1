package main

import (
	"flag"
	"log/slog"

	"k8s.io/client-go/kubernetes"
)

// logFlags choose what of the host's and the provider's logs a command
// that runs a provider shows on stderr (its results go to stdout).
type logFlags struct {
	level   string
	verbose bool
}

func addLogFlags(fs *flag.FlagSet) *logFlags {
	l := &logFlags{}
	fs.StringVar(&l.level, "log-level", "warn", "show the host's and the provider's log records at this level and above on stderr: debug, info, warn or error")
	fs.BoolVar(&l.verbose, "v", false, "verbose: -log-level debug")
	return l
}

func (l *logFlags) logger() (*slog.Logger, error) {
	level := l.level
	if l.verbose {
		level = "debug"
	}
	return newLogger(stderr, "text", level)
}

// cliEnv is what a command that runs a provider gives the runtime besides
// the module and its policy.
type cliEnv struct {
	logger *slog.Logger
	// kube resolves the Machine's Secret and ConfigMap references; nil:
	// none can be.
	kube kubernetes.Interface
}

func newCLIEnv(l *logFlags, k *kubeFlags) (cliEnv, error) {
	logger, err := l.logger()
	if err != nil {
		return cliEnv{}, err
	}
	kube, err := k.client()
	if err != nil {
		return cliEnv{}, err
	}
	return cliEnv{logger: logger, kube: kube}, nil
}
