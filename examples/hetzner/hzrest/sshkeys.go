package hzrest

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// CreateSSHKey implements hzprovider.API.
func (c *Client) CreateSSHKey(ctx context.Context, name, pub string, labels map[string]string) (int64, error) {
	var out struct {
		SSHKey struct {
			ID int64 `json:"id"`
		} `json:"ssh_key"`
	}
	err := c.do(ctx, methodPost, "/ssh_keys", map[string]any{"name": name, "public_key": pub, "labels": labels}, &out)
	return out.SSHKey.ID, err
}

// DeleteSSHKey implements hzprovider.API.
func (c *Client) DeleteSSHKey(ctx context.Context, id int64) error {
	return c.do(ctx, methodDelete, "/ssh_keys/"+strconv.FormatInt(id, 10), nil, nil)
}

// SSHKeys implements hzprovider.API.
func (c *Client) SSHKeys(ctx context.Context, selector string) ([]int64, error) {
	var ids []int64
	err := c.list(ctx, "/ssh_keys", url.Values{"label_selector": {selector}}, func(b []byte) error {
		var page struct {
			SSHKeys []struct {
				ID int64 `json:"id"`
			} `json:"ssh_keys"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		for _, k := range page.SSHKeys {
			ids = append(ids, k.ID)
		}
		return nil
	})
	return ids, err
}
