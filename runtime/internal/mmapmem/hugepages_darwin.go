package mmapmem

// adviseNoHugePages does nothing: Darwin has no transparent huge pages.
func adviseNoHugePages([]byte) {}
