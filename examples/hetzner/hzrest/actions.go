package hzrest

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

type actionAnswer struct {
	Action struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"action"`
}

// WaitForAction implements hzprovider.API.
func (c *Client) WaitForAction(ctx context.Context, id int64) error {
	for {
		var out actionAnswer
		if err := c.do(ctx, methodGet, "/actions/"+strconv.FormatInt(id, 10), nil, &out); err != nil {
			return err
		}
		switch out.Action.Status {
		case "success":
			return nil
		case "error":
			if e := out.Action.Error; e != nil {
				return fmt.Errorf("action %d failed: %s: %s", id, e.Code, e.Message)
			}
			return fmt.Errorf("action %d failed", id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for action %d: %w", id, ctx.Err())
		case <-time.After(c.PollInterval):
		}
	}
}

// DetachVolume implements hzprovider.API.
func (c *Client) DetachVolume(ctx context.Context, id int64) (int64, error) {
	var out actionAnswer
	err := c.do(ctx, methodPost, "/volumes/"+strconv.FormatInt(id, 10)+"/actions/detach", struct{}{}, &out)
	return out.Action.ID, err
}
