package webui

import (
	"errors"
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// instanceData is one instance's page.
type instanceData struct {
	Name, Label, Address string
	// Current is the instance in the current version, attributes masked;
	// nil when the current version does not hold it.
	Current *history.InstanceView
	Changes []history.AddressChange
}

// addressOf reads the state and the address parameter of a page about
// one address of a state the viewer may read.
func (u *UI) addressOf(r *http.Request, v *visit) (name, address string, err error) {
	name = r.PathValue("name")
	if err := u.readable(r, v, name); err != nil {
		return "", "", err
	}
	const hint = "name an instance or a resource: ?address=aws_instance.web[0]"
	switch address = r.URL.Query().Get("address"); {
	case address == "":
		return "", "", badParam("address", "missing", hint)
	case len(address) > 4096:
		return "", "", badParam("address", "longer than 4096 bytes", hint)
	}
	return name, address, nil
}

// instance serves GET /ui/states/{name}/instance?address=: the instance's
// attributes in the current version (masked) and every version that
// added, changed or removed it, with the attribute paths.
func (u *UI) instance(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	name, address, err := u.addressOf(r, v)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	d := instanceData{Name: name, Label: v.label(name), Address: address}
	if d.Changes, err = history.AddressHistory(ctx, u.engine, name, address); err != nil {
		return nil, err
	}
	cur, err := history.ShowInstance(ctx, u.engine, name, kilolock.Latest, address)
	switch {
	case err == nil:
		d.Current = cur
	case !errors.Is(err, kilolock.ErrNotFound):
		return nil, err
	}
	return &view{Template: "instance", Title: address, Crumbs: []crumb{{d.Label, stateURL(name)}, {Label: address}}, Data: d}, nil
}
