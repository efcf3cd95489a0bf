package kubeapi

import "encoding/json"

// The wire types of meta.k8s.io/v1 this package answers with, written as
// plain structs with the JSON field names of k8s.io/apimachinery's
// metav1 types: importing metav1 itself links gogo protobuf, CBOR and
// structured-merge-diff into every binary (docs/design/kubernetes-api.md).

// Status is metav1.Status: every error answer, and the answer of a delete.
type Status struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   ListMeta       `json:"metadata"`
	Status     string         `json:"status,omitempty"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *StatusDetails `json:"details,omitempty"`
	Code       int            `json:"code,omitempty"`
}

// StatusDetails is metav1.StatusDetails.
type StatusDetails struct {
	Name   string        `json:"name,omitempty"`
	Group  string        `json:"group,omitempty"`
	Kind   string        `json:"kind,omitempty"`
	UID    string        `json:"uid,omitempty"`
	Causes []StatusCause `json:"causes,omitempty"`
}

// StatusCause is metav1.StatusCause: one invalid field.
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// ListMeta is metav1.ListMeta.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Continue        string `json:"continue,omitempty"`
}

// APIVersions is /api's answer.
type APIVersions struct {
	Kind                       string                      `json:"kind"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

// ServerAddressByClientCIDR is metav1.ServerAddressByClientCIDR.
type ServerAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

// APIGroupList is /apis's answer.
type APIGroupList struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Groups     []APIGroup `json:"groups"`
}

// APIGroup is one group of /apis (and /apis/{group}'s answer).
type APIGroup struct {
	Kind             string                     `json:"kind,omitempty"`
	APIVersion       string                     `json:"apiVersion,omitempty"`
	Name             string                     `json:"name"`
	Versions         []GroupVersionForDiscovery `json:"versions"`
	PreferredVersion GroupVersionForDiscovery   `json:"preferredVersion"`
}

// GroupVersionForDiscovery is metav1.GroupVersionForDiscovery.
type GroupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// APIResourceList is /api/v1's and /apis/{group}/{version}'s answer.
type APIResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []APIResource `json:"resources"`
}

// APIResource is metav1.APIResource.
type APIResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
	ShortNames   []string `json:"shortNames,omitempty"`
	Categories   []string `json:"categories,omitempty"`
}

// Table is meta.k8s.io/v1 Table, what `kubectl get` asks for.
type Table struct {
	Kind              string                  `json:"kind"`
	APIVersion        string                  `json:"apiVersion"`
	Metadata          ListMeta                `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition is metav1.TableColumnDefinition.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

// TableRow is metav1.TableRow; Object is the row's object (a
// PartialObjectMetadata unless includeObject says otherwise).
type TableRow struct {
	Cells  []any           `json:"cells"`
	Object json.RawMessage `json:"object,omitempty"`
}

// List is a kind's list (CertificateList, SecretList, ...).
type List struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Metadata   ListMeta          `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}
