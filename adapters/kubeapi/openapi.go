package kubeapi

import "net/http"

func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) error {
	return notFound("the server could not find the requested resource")
}
