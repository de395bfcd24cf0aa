// Command terraform-provider-drifty is a provider for the end-to-end tests
// whose one resource, drifty_database, keeps its real object in a file:
// edit the file and a refresh finds drift, no cloud needed. Its url is
// computed from the password and the host, as a provider's connection
// string is, and so holds the sensitive password without being marked.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func main() {
	err := providerserver.Serve(context.Background(), func() provider.Provider { return drifty{} },
		providerserver.ServeOpts{Address: "registry.opentofu.org/kilolock/drifty"})
	if err != nil {
		log.Fatal(err)
	}
}

type drifty struct{}

func (drifty) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "drifty"
}
func (drifty) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse)          {}
func (drifty) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {}
func (drifty) DataSources(context.Context) []func() datasource.DataSource                        { return nil }
func (drifty) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return database{} }}
}

// database is a database whose real object is the JSON file at path.
type database struct{}

type model struct {
	ID       types.String `tfsdk:"id"`
	Path     types.String `tfsdk:"path"`
	Host     types.String `tfsdk:"host"`
	Password types.String `tfsdk:"password"`
	URL      types.String `tfsdk:"url"`
}

// real is what the file holds.
type real struct {
	Host     string `json:"host"`
	Password string `json:"password"`
}

func (database) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_database"
}

func (database) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"id":       schema.StringAttribute{Computed: true},
		"path":     schema.StringAttribute{Required: true},
		"host":     schema.StringAttribute{Required: true},
		"password": schema.StringAttribute{Required: true, Sensitive: true},
		"url":      schema.StringAttribute{Computed: true},
	}}
}

// set writes m's real object and fills in what is computed.
func set(m *model) error {
	b, err := json.Marshal(real{Host: m.Host.ValueString(), Password: m.Password.ValueString()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(m.Path.ValueString(), b, 0o600); err != nil {
		return err
	}
	m.ID = m.Path
	m.URL = types.StringValue("pg://admin:" + m.Password.ValueString() + "@" + m.Host.ValueString())
	return nil
}

func (database) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.Append(save(ctx, req.Plan, &resp.State)...)
}

// save writes the real object plan describes, and the state.
func save(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State) diag.Diagnostics {
	var m model
	diags := plan.Get(ctx, &m)
	if diags.HasError() {
		return diags
	}
	if err := set(&m); err != nil {
		diags.AddError("write the database", err.Error())
		return diags
	}
	return append(diags, state.Set(ctx, &m)...)
}

func (database) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m model
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	b, err := os.ReadFile(m.Path.ValueString())
	if errors.Is(err, fs.ErrNotExist) {
		resp.State.RemoveResource(ctx)
		return
	}
	var r real
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		resp.Diagnostics.AddError("read the database", err.Error())
		return
	}
	m.Host, m.Password = types.StringValue(r.Host), types.StringValue(r.Password)
	m.URL = types.StringValue("pg://admin:" + r.Password + "@" + r.Host)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (database) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(save(ctx, req.Plan, &resp.State)...)
}

func (database) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m model
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	if err := os.Remove(m.Path.ValueString()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		resp.Diagnostics.AddError("delete the database", err.Error())
	}
}
