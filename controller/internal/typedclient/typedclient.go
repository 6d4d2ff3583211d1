// Package typedclient builds the REST client for one group version of this
// module's API types. They have no generated clientset; the typed clients
// over this REST client are client-go's generic ones (k8s.io/client-go/gentype),
// the same code a generated clientset is made of.
package typedclient

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// For returns a REST client for gv's resources under /apis, speaking JSON
// and decoding with codecs. cfg is copied, not changed.
func For(cfg *rest.Config, gv schema.GroupVersion, codecs serializer.CodecFactory) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = codecs.WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client for %s: %w", gv, err)
	}
	return rc, nil
}
