package hcloudsim

import "time"

// The JSON shapes below follow the public Hetzner Cloud API reference
// (https://docs.hetzner.cloud). Only fields a client of the simulated subset
// reads are filled in; every timestamp is RFC 3339 or null, as clients such
// as hcloud-go parse them strictly.

// Location is a Hetzner location (a city with one or more datacenters).
type Location struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Country     string  `json:"country"`
	City        string  `json:"city"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	NetworkZone string  `json:"network_zone"`
}

// Datacenter is a Hetzner datacenter.
type Datacenter struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Location    Location `json:"location"`
	ServerTypes struct {
		Supported             []int64 `json:"supported"`
		Available             []int64 `json:"available"`
		AvailableForMigration []int64 `json:"available_for_migration"`
	} `json:"server_types"`
}

// ServerType is a Hetzner server type.
type ServerType struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	Cores        int     `json:"cores"`
	Memory       float64 `json:"memory"`
	Disk         int     `json:"disk"`
	Deprecated   bool    `json:"deprecated"`
	Prices       []any   `json:"prices"`
	StorageType  string  `json:"storage_type"`
	CPUType      string  `json:"cpu_type"`
	Architecture string  `json:"architecture"`
	Deprecation  any     `json:"deprecation"`
}

// Protection is the protection object of several resources.
type Protection struct {
	Delete bool `json:"delete"`
}

// Image is a Hetzner image.
type Image struct {
	ID           int64             `json:"id"`
	Type         string            `json:"type"`
	Status       string            `json:"status"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	ImageSize    *float64          `json:"image_size"`
	DiskSize     float64           `json:"disk_size"`
	Created      string            `json:"created"`
	CreatedFrom  any               `json:"created_from"`
	BoundTo      *int64            `json:"bound_to"`
	OSFlavor     string            `json:"os_flavor"`
	OSVersion    *string           `json:"os_version"`
	RapidDeploy  bool              `json:"rapid_deploy"`
	Protection   Protection        `json:"protection"`
	Deprecated   *string           `json:"deprecated"`
	Deleted      *string           `json:"deleted"`
	Labels       map[string]string `json:"labels"`
	Architecture string            `json:"architecture"`
}

// SSHKey is a Hetzner SSH key.
type SSHKey struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Fingerprint string            `json:"fingerprint"`
	PublicKey   string            `json:"public_key"`
	Labels      map[string]string `json:"labels"`
	Created     string            `json:"created"`
}

// Volume is a Hetzner volume.
type Volume struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Server      *int64            `json:"server"`
	Location    Location          `json:"location"`
	Size        int               `json:"size"`
	LinuxDevice string            `json:"linux_device"`
	Protection  Protection        `json:"protection"`
	Labels      map[string]string `json:"labels"`
	Status      string            `json:"status"`
	Created     string            `json:"created"`
	Format      *string           `json:"format"`
}

// ActionResource is a resource an action is about.
type ActionResource struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

// ActionError is the error of a failed action.
type ActionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Action is a Hetzner action as the API renders it.
type Action struct {
	ID        int64            `json:"id"`
	Command   string           `json:"command"`
	Status    string           `json:"status"`
	Progress  int              `json:"progress"`
	Started   string           `json:"started"`
	Finished  *string          `json:"finished"`
	Resources []ActionResource `json:"resources"`
	Error     *ActionError     `json:"error"`
}

// Server is a Hetzner server as the API renders it.
type Server struct {
	ID              int64        `json:"id"`
	Name            string       `json:"name"`
	Status          string       `json:"status"`
	Created         string       `json:"created"`
	PublicNet       PublicNet    `json:"public_net"`
	PrivateNet      []PrivateNet `json:"private_net"`
	ServerType      ServerType   `json:"server_type"`
	Datacenter      Datacenter   `json:"datacenter"`
	Location        Location     `json:"location"`
	Image           *Image       `json:"image"`
	ISO             any          `json:"iso"`
	RescueEnabled   bool         `json:"rescue_enabled"`
	Locked          bool         `json:"locked"`
	BackupWindow    *string      `json:"backup_window"`
	OutgoingTraffic *uint64      `json:"outgoing_traffic"`
	IngoingTraffic  *uint64      `json:"ingoing_traffic"`
	IncludedTraffic uint64       `json:"included_traffic"`
	Protection      struct {
		Delete  bool `json:"delete"`
		Rebuild bool `json:"rebuild"`
	} `json:"protection"`
	Labels          map[string]string `json:"labels"`
	Volumes         []int64           `json:"volumes"`
	LoadBalancers   []int64           `json:"load_balancers"`
	PrimaryDiskSize int               `json:"primary_disk_size"`
	PlacementGroup  *PlacementGroup   `json:"placement_group"`
}

// PublicNet is a server's public network configuration.
type PublicNet struct {
	IPv4        *PublicIPv4      `json:"ipv4"`
	IPv6        *PublicIPv6      `json:"ipv6"`
	FloatingIPs []int64          `json:"floating_ips"`
	Firewalls   []ServerFirewall `json:"firewalls"`
}

// PublicIPv4 is a server's primary IPv4.
type PublicIPv4 struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  string `json:"dns_ptr"`
}

// PublicIPv6 is a server's primary IPv6 network.
type PublicIPv6 struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  []any  `json:"dns_ptr"`
}

// PrivateNet is a server's attachment to a private network.
type PrivateNet struct {
	Network    int64    `json:"network"`
	IP         string   `json:"ip"`
	AliasIPs   []string `json:"alias_ips"`
	MACAddress string   `json:"mac_address"`
}

// Pagination is meta.pagination of list responses.
type Pagination struct {
	Page         int  `json:"page"`
	PerPage      int  `json:"per_page"`
	PreviousPage *int `json:"previous_page"`
	NextPage     *int `json:"next_page"`
	LastPage     int  `json:"last_page"`
	TotalEntries int  `json:"total_entries"`
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }
