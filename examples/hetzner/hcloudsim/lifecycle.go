package hcloudsim

import "time"

type server struct {
	Server
	userData string
	bootAt   time.Time
	// deleting is set by DELETE; the server then disappears at deleteAt
	// or, counting reads (Options.DeleteReads), once readsLeft is spent.
	deleting  bool
	byReads   bool
	deleteAt  time.Time
	readsLeft int
	// deletion is the DELETE's action, which succeeds when the server is
	// gone.
	deletion *action
}

// StickInitializing keeps servers named name in "initializing" for good
// (or releases them when stuck is false), to simulate a server that never
// finishes booting.
func (s *Sim) StickInitializing(name string, stuck bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck[name] = stuck
}

// advance moves time-driven state forward: finished actions, booted and
// deleted servers. Called with s.mu held.
func (s *Sim) advance(now time.Time) {
	for _, a := range s.actions {
		if a.Status == "running" && !now.Before(a.done) {
			a.finish(a.done)
		}
	}
	for _, srv := range s.servers {
		if srv.deleting {
			if !srv.byReads && !now.Before(srv.deleteAt) {
				s.remove(srv, srv.deleteAt)
			}
			continue
		}
		if srv.Status == "initializing" && !now.Before(srv.bootAt) && !s.stuck[srv.Name] {
			srv.Status = "running"
		}
	}
}

// remove makes a deleting server disappear at time at, and its delete
// action succeed. Called with s.mu held.
func (s *Sim) remove(srv *server, at time.Time) {
	delete(s.servers, srv.ID)
	s.detach(srv)
	if srv.deletion != nil {
		srv.deletion.done = at
		srv.deletion.finish(at)
	}
}

// read counts one API read of srv and reports whether srv is still there
// to be shown: a server deleting by reads (Options.DeleteReads) vanishes
// once its reads are spent. Called with s.mu held.
func (s *Sim) read(srv *server, now time.Time) bool {
	if !srv.deleting || !srv.byReads {
		return true
	}
	if srv.readsLeft <= 0 {
		s.remove(srv, now)
		return false
	}
	srv.readsLeft--
	return true
}
