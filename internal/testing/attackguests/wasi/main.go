// Command wasi is a hostile guest that probes what WASI gives it: its
// MachineMetricsLabels reports, as labels, what it could read, list, dial
// and measure. The host must have given it no files, no environment but
// GOGC, no sockets and a fake clock (without the clock capability), and
// randomness no other instance draws too. Go's wasip1 port has an in-process fake
// network, so net.Listen succeeds inside the guest without a host socket;
// the test proves that by having it dial a real host listener.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type attacker struct{}

func init() { provider.Register(attacker{}) }

func main() {}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return "error"
}

func (attacker) MachineMetricsLabels(_ context.Context, m *provider.Machine) (map[string]string, error) {
	labels := map[string]string{}
	_, err := os.ReadFile("/etc/passwd")
	labels["readPasswd"] = errString(err)
	_, err = os.ReadDir("/")
	labels["readRoot"] = errString(err)
	err = os.WriteFile("/tmp/owned", []byte("x"), 0o644)
	labels["writeTmp"] = errString(err)
	labels["env"] = strings.Join(os.Environ(), ",")
	_, hasHome := os.LookupEnv("HOME")
	labels["home"] = strconv.FormatBool(hasHome)
	_, err = net.Listen("tcp", "127.0.0.1:0")
	labels["listen"] = errString(err)
	// The test puts the address of a real listener on the host in the
	// Machine's name: the guest must not reach it.
	_, err = net.Dial("tcp", m.Name)
	labels["dial"] = errString(err)
	labels["year"] = strconv.Itoa(time.Now().Year())
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	labels["random"] = hex.EncodeToString(b)
	return labels, nil
}

func (attacker) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}
func (attacker) Validate(context.Context, provider.MachineSpec) error { return nil }
func (attacker) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	return &provider.Instance{Name: m.Name, ID: m.UID, Status: provider.StatusRunning}, nil
}
func (attacker) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}
func (attacker) Create(context.Context, *provider.Machine, string) (*provider.Instance, error) {
	return nil, nil
}
func (attacker) Delete(context.Context, *provider.Machine) error             { return nil }
func (attacker) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
