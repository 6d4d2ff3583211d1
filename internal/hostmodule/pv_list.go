package hostmodule

import (
	"context"
	"encoding/json"

	"github.com/wasmprov/wasmprov/abi"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// pvList lists PersistentVolumes through the caller's Data.ListPersistentVolumes (an
// informer-backed lister, or a controller-runtime client's cached List) and
// returns a PersistentVolumeList.
func pvList(_ context.Context, c *Call, req []byte) ([]byte, error) {
	if !c.createOrDelete() || c.Data == nil || c.Data.ListPersistentVolumes == nil {
		return nil, errorf(abi.ErrnoUnavailable, "pv_list is only available in Create and Delete with a PV lister")
	}
	var r abi.PVListRequest
	if len(req) > 0 {
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, errorf(abi.ErrnoInvalid, "pv_list request is not valid JSON: %v", err)
		}
	}
	sel, err := labels.Parse(r.LabelSelector)
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "invalid label selector %q: %v", r.LabelSelector, err)
	}
	pvs, err := c.Data.ListPersistentVolumes(c.blocking(), sel)
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "listing persistent volumes: %v", err)
	}
	list := corev1.PersistentVolumeList{Items: make([]corev1.PersistentVolume, 0, len(pvs))}
	list.Kind, list.APIVersion = "PersistentVolumeList", "v1"
	list.Items = append(list.Items, pvs...)
	return json.Marshal(&list)
}
