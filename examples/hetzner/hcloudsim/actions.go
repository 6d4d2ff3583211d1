package hcloudsim

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

type action struct {
	Action
	start time.Time
	done  time.Time
	onEnd func()
}

func (s *Sim) newAction(now time.Time, command string, res []ActionResource, onEnd func()) *action {
	a := &action{Action: Action{ID: s.id(), Command: command, Status: "running", Started: ts(now), Resources: res},
		start: now, done: now.Add(s.actionDuration()), onEnd: onEnd}
	s.actions[a.ID] = a
	return a
}

// finish makes a running action succeed at time at.
func (a *action) finish(at time.Time) {
	if a.Status != "running" {
		return
	}
	a.Status, a.Progress = "success", 100
	f := ts(at)
	a.Finished = &f
	if a.onEnd != nil {
		a.onEnd()
		a.onEnd = nil
	}
}

func (a *action) render(now time.Time) Action {
	out := a.Action
	if out.Status == "running" {
		total := a.done.Sub(a.start)
		if total > 0 {
			out.Progress = int(100 * now.Sub(a.start) / total)
		}
		if out.Progress > 99 {
			out.Progress = 99
		}
	}
	if out.Resources == nil {
		out.Resources = []ActionResource{}
	}
	return out
}

func (s *Sim) actionByID(idStr string, now time.Time) (any, int, *apiError) {
	id, _ := strconv.ParseInt(idStr, 10, 64)
	a, ok := s.actions[id]
	if !ok {
		return nil, 0, notFound("action", idStr)
	}
	return map[string]any{"action": a.render(now)}, 200, nil
}

func (s *Sim) serveActions(r *http.Request, parts []string, now time.Time) (any, *apiError) {
	if r.Method != http.MethodGet {
		return nil, errf(405, "method_not_allowed", "method not allowed")
	}
	if len(parts) == 2 {
		res, _, err := s.actionByID(parts[1], now)
		return res, err
	}
	q := r.URL.Query()
	ids := map[string]bool{}
	for _, id := range q["id"] {
		ids[id] = true
	}
	acts := make([]*action, 0, len(s.actions))
	for _, a := range s.actions {
		if len(ids) > 0 && !ids[strconv.FormatInt(a.ID, 10)] {
			continue
		}
		if !matchAny(q["status"], a.Status) {
			continue
		}
		acts = append(acts, a)
	}
	sort.Slice(acts, func(i, j int) bool { return acts[i].ID < acts[j].ID })
	items := make([]any, 0, len(acts))
	for _, a := range acts {
		items = append(items, a.render(now))
	}
	return paginate(q, "actions", items)
}
