package dosim

import (
	"net/http"
	"slices"
	"strconv"
)

// Region is a DigitalOcean region as GET /v2/regions lists it.
type Region struct {
	Name      string   `json:"name"`
	Slug      string   `json:"slug"`
	Features  []string `json:"features"`
	Available bool     `json:"available"`
	Sizes     []string `json:"sizes"`
}

// Size is a droplet size as GET /v2/sizes lists it.
type Size struct {
	Slug         string   `json:"slug"`
	Memory       int      `json:"memory"`
	Vcpus        int      `json:"vcpus"`
	Disk         int      `json:"disk"`
	Transfer     float64  `json:"transfer"`
	PriceMonthly float64  `json:"price_monthly"`
	PriceHourly  float64  `json:"price_hourly"`
	Regions      []string `json:"regions"`
	Available    bool     `json:"available"`
	Description  string   `json:"description"`
}

// Image is a public distribution image as GET /v2/images/{id or slug}
// answers it.
type Image struct {
	ID            int      `json:"id"`
	Name          string   `json:"name"`
	Distribution  string   `json:"distribution"`
	Slug          string   `json:"slug"`
	Public        bool     `json:"public"`
	Regions       []string `json:"regions"`
	CreatedAt     string   `json:"created_at"`
	Type          string   `json:"type"`
	MinDiskSize   int      `json:"min_disk_size"`
	SizeGigabytes float64  `json:"size_gigabytes"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	Status        string   `json:"status"`
}

// The catalogue: current regions (sfo2, closed to new droplets, listed
// unavailable), Basic and CPU-Optimized sizes, the retired legacy "2gb"
// (listed, unavailable) and a GPU size offered in two regions only; the
// images machine-controller's provider asks for (ubuntu-24-04-x64,
// rockylinux-9-x64) and a few others.
var (
	regionOrder = []string{"nyc1", "nyc3", "sfo2", "sfo3", "ams3", "sgp1", "lon1", "fra1", "tor1", "blr1", "syd1", "atl1"}
	allRegions  = slices.DeleteFunc(slices.Clone(regionOrder), func(r string) bool { return r == "sfo2" })
	features    = []string{"backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"}

	regionNames = map[string]string{"nyc1": "New York 1", "nyc3": "New York 3", "sfo2": "San Francisco 2",
		"sfo3": "San Francisco 3", "ams3": "Amsterdam 3", "sgp1": "Singapore 1", "lon1": "London 1",
		"fra1": "Frankfurt 1", "tor1": "Toronto 1", "blr1": "Bangalore 1", "syd1": "Sydney 1", "atl1": "Atlanta 1"}

	sizes = []Size{
		{Slug: "s-1vcpu-1gb", Memory: 1024, Vcpus: 1, Disk: 25, Transfer: 1, PriceMonthly: 6, PriceHourly: 0.00893, Available: true, Description: "Basic"},
		{Slug: "s-1vcpu-2gb", Memory: 2048, Vcpus: 1, Disk: 50, Transfer: 2, PriceMonthly: 12, PriceHourly: 0.01786, Available: true, Description: "Basic"},
		{Slug: "s-2vcpu-2gb", Memory: 2048, Vcpus: 2, Disk: 60, Transfer: 3, PriceMonthly: 18, PriceHourly: 0.02679, Available: true, Description: "Basic"},
		{Slug: "s-2vcpu-4gb", Memory: 4096, Vcpus: 2, Disk: 80, Transfer: 4, PriceMonthly: 24, PriceHourly: 0.03571, Available: true, Description: "Basic"},
		{Slug: "s-4vcpu-8gb", Memory: 8192, Vcpus: 4, Disk: 160, Transfer: 5, PriceMonthly: 48, PriceHourly: 0.07143, Available: true, Description: "Basic"},
		{Slug: "c-2", Memory: 4096, Vcpus: 2, Disk: 25, Transfer: 4, PriceMonthly: 42, PriceHourly: 0.0625, Available: true, Description: "CPU-Optimized"},
		{Slug: "c-4", Memory: 8192, Vcpus: 4, Disk: 50, Transfer: 5, PriceMonthly: 84, PriceHourly: 0.125, Available: true, Description: "CPU-Optimized"},
		{Slug: "2gb", Memory: 2048, Vcpus: 2, Disk: 40, Transfer: 3, PriceMonthly: 20, PriceHourly: 0.02976, Available: false, Description: "Legacy"},
		{Slug: "gpu-h100x1-80gb", Memory: 245760, Vcpus: 20, Disk: 720, Transfer: 15, PriceMonthly: 2522.16, PriceHourly: 3.39,
			Regions: []string{"nyc3", "tor1"}, Available: true, Description: "H100 GPU - 1X"},
	}

	images = []Image{
		image(169000001, "24.04 (LTS) x64", "Ubuntu", "ubuntu-24-04-x64", 7, 2.36),
		image(169000002, "22.04 (LTS) x64", "Ubuntu", "ubuntu-22-04-x64", 7, 2.1),
		image(169000003, "9 x64", "Rocky Linux", "rockylinux-9-x64", 10, 1.53),
		image(169000004, "8 x64", "Rocky Linux", "rockylinux-8-x64", 10, 1.41),
		image(169000005, "12 x64", "Debian", "debian-12-x64", 7, 0.98),
	}
)

func image(id int, name, distro, slug string, minDisk int, gb float64) Image {
	return Image{ID: id, Name: name, Distribution: distro, Slug: slug, Public: true, Regions: allRegions,
		CreatedAt: "2026-04-25T16:22:40Z", Type: "base", MinDiskSize: minDisk, SizeGigabytes: gb,
		Description: distro + " " + name, Tags: []string{}, Status: "available"}
}

func init() {
	for i := range sizes {
		if sizes[i].Regions == nil {
			sizes[i].Regions = allRegions
		}
	}
}

func regions() []Region {
	var out []Region
	for _, slug := range regionOrder {
		r := Region{Name: regionNames[slug], Slug: slug, Features: features, Available: slices.Contains(allRegions, slug), Sizes: []string{}}
		for _, sz := range sizes {
			if r.Available && sz.Available && slices.Contains(sz.Regions, slug) {
				r.Sizes = append(r.Sizes, sz.Slug)
			}
		}
		out = append(out, r)
	}
	return out
}

func regionBySlug(slug string) (Region, bool) {
	for _, r := range regions() {
		if r.Slug == slug {
			return r, true
		}
	}
	return Region{}, false
}

func sizeBySlug(slug string) (Size, bool) {
	for _, sz := range sizes {
		if sz.Slug == slug {
			return sz, true
		}
	}
	return Size{}, false
}

// imageByRef finds an image by ID or slug.
func imageByRef(ref string) (Image, bool) {
	id, err := strconv.Atoi(ref)
	for _, img := range images {
		if (err == nil && img.ID == id) || img.Slug == ref {
			return img, true
		}
	}
	return Image{}, false
}

func (s *Sim) listRegions(w http.ResponseWriter, r *http.Request) {
	all := regions()
	p, e := s.paginate(r, len(all))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"regions": all[p.from:p.to], "links": p.links, "meta": p.meta})
}

func (s *Sim) listSizes(w http.ResponseWriter, r *http.Request) {
	p, e := s.paginate(r, len(sizes))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sizes": sizes[p.from:p.to], "links": p.links, "meta": p.meta})
}

func (s *Sim) getImage(w http.ResponseWriter, r *http.Request) {
	img, ok := imageByRef(r.PathValue("ref"))
	if !ok {
		writeError(w, notFound())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"image": img})
}
