package control

import (
	"net/http"
	"strings"

	"github.com/basil-project/basil/lab/internal/vc"
)

// StockFront serves govmomi's stock simulator model and the part of the control API that applies
// to it: GET /lab/, GET /lab/status and POST /lab/faults/session-loss (the same credentials).
type StockFront struct {
	stock *vc.Stock
	creds Credentials
}

// NewStock serves stock; control requests must carry creds.
func NewStock(stock *vc.Stock, creds Credentials) *StockFront {
	return &StockFront{stock: stock, creds: creds}
}

// Close stops the simulator.
func (f *StockFront) Close() { f.stock.Close() }

func (f *StockFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/lab" && !strings.HasPrefix(r.URL.Path, "/lab/") {
		f.stock.Handler().ServeHTTP(w, r)
		return
	}
	if !f.creds.allows(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="basil-lab control", charset="UTF-8"`)
		writeError(w, &httpError{http.StatusUnauthorized, "the control API needs the lab's user and password (HTTP Basic)"})
		return
	}
	path := r.URL.Path
	if path == "/lab" {
		path = "/lab/"
	}
	switch {
	case path == "/lab/" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, []map[string]string{
			{"Method": "GET", "Path": "/lab/status", "Doc": "the model served"},
			{"Method": "POST", "Path": "/lab/faults/session-loss", "Doc": "invalidate every SOAP and Automation API session"},
		})
	case path == "/lab/status" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]string{"model": "stock", "inventory": "govmomi simulator.VPX()"})
	case path == "/lab/faults/session-loss" && r.Method == http.MethodPost:
		if err := checkContentType(r, []string{jsonType}); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"sessions": f.stock.KillSessions()})
	default:
		writeError(w, &httpError{http.StatusNotFound, r.Method + " " + path + ": not served in --stock mode (GET /lab/ lists what is)"})
	}
}
