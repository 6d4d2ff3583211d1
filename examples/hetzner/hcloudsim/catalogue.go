package hcloudsim

import (
	"net/http"
	"strconv"
	"time"
)

func (s *Sim) seed() {
	created := ts(time.Date(2024, 4, 25, 0, 0, 0, 0, time.UTC))
	locs := []Location{
		{1, "fsn1", "Falkenstein DC Park 1", "DE", "Falkenstein", 50.47612, 12.370071, "eu-central"},
		{2, "nbg1", "Nuremberg DC Park 1", "DE", "Nuremberg", 49.452102, 11.076665, "eu-central"},
		{3, "hel1", "Helsinki DC Park 1", "FI", "Helsinki", 60.169855, 24.938379, "eu-central"},
		{4, "ash", "Ashburn, VA", "US", "Ashburn, VA", 39.045821, -77.487073, "us-east"},
		{5, "hil", "Hillsboro, OR", "US", "Hillsboro, OR", 45.54222, -122.951924, "us-west"},
		{6, "sin", "Singapore", "SG", "Singapore", 1.283333, 103.833333, "ap-southeast"},
	}
	s.locations = locs
	s.serverTypes = []ServerType{
		{ID: 22, Name: "cpx11", Description: "CPX 11", Cores: 2, Memory: 2, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 104, Name: "cx22", Description: "CX22", Cores: 2, Memory: 4, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 105, Name: "cx32", Description: "CX32", Cores: 4, Memory: 8, Disk: 80, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 45, Name: "cax11", Description: "CAX11", Cores: 2, Memory: 4, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "arm"},
		{ID: 96, Name: "ccx13", Description: "CCX13 Dedicated CPU", Cores: 2, Memory: 8, Disk: 80, StorageType: "local", CPUType: "dedicated", Architecture: "x86"},
	}
	for i := range s.serverTypes {
		s.serverTypes[i].Prices = []any{}
	}
	var all []int64
	for _, t := range s.serverTypes {
		all = append(all, t.ID)
	}
	dcs := []string{"fsn1-dc14", "nbg1-dc3", "hel1-dc2", "ash-dc1", "hil-dc1", "sin-dc1"}
	for i, name := range dcs {
		dc := Datacenter{ID: int64(i + 1), Name: name, Description: locs[i].City + " DC", Location: locs[i]}
		dc.ServerTypes.Supported, dc.ServerTypes.Available, dc.ServerTypes.AvailableForMigration = all, all, all
		s.datacenters = append(s.datacenters, dc)
	}
	var id int64 = 160000000
	for _, img := range []struct{ name, flavor, version, desc string }{
		{"ubuntu-22.04", "ubuntu", "22.04", "Ubuntu 22.04"},
		{"ubuntu-24.04", "ubuntu", "24.04", "Ubuntu 24.04"},
		{"rocky-8", "rocky", "8", "Rocky Linux 8"},
		{"rocky-9", "rocky", "9", "Rocky Linux 9"},
		{"debian-12", "debian", "12", "Debian 12"},
		{"flatcar", "unknown", "", "Flatcar Container Linux"},
	} {
		for _, arch := range []string{"x86", "arm"} {
			id++
			v := img.version
			var ver *string
			if v != "" {
				ver = &v
			}
			s.images = append(s.images, Image{
				ID: id, Type: "system", Status: "available", Name: img.name, Description: img.desc,
				DiskSize: 5, Created: created, OSFlavor: img.flavor, OSVersion: ver, RapidDeploy: true,
				Labels: map[string]string{}, Architecture: arch,
			})
		}
	}
}

func (s *Sim) location(nameOrID string) (Location, bool) {
	for _, l := range s.locations {
		if l.Name == nameOrID || strconv.FormatInt(l.ID, 10) == nameOrID {
			return l, true
		}
	}
	return Location{}, false
}

// catalogue serves the read-only collections: list with name filter and
// pagination, or one by ID.
func (s *Sim) catalogue(r *http.Request, parts []string, kind string, n int, at func(int) (int64, string, any),
	filter func(int, map[string][]string) bool) (any, *apiError) {
	if r.Method != http.MethodGet {
		return nil, errf(405, "method_not_allowed", "method not allowed")
	}
	plural := kind + "s"
	if len(parts) == 2 {
		for i := 0; i < n; i++ {
			if id, _, v := at(i); strconv.FormatInt(id, 10) == parts[1] {
				return map[string]any{kind: v}, nil
			}
		}
		return nil, notFound(kind, parts[1])
	}
	if len(parts) != 1 {
		return nil, errf(404, "not_found", "not found")
	}
	q := r.URL.Query()
	if sel := q.Get("label_selector"); sel != "" {
		if _, err := parseSelector(sel); err != nil {
			return nil, errf(400, "invalid_input", "invalid label_selector: %v", err)
		}
	}
	var items []any
	for i := 0; i < n; i++ {
		_, name, v := at(i)
		if q.Has("name") && q.Get("name") != name {
			continue
		}
		if filter != nil && !filter(i, q) {
			continue
		}
		items = append(items, v)
	}
	return paginate(q, plural, items)
}
