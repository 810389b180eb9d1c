// Standalone mode's sign-in: an API token (from `basil token create`), kept in sessionStorage only.

import { useState } from 'react';

export function TokenScreen({ error, onToken }: { error: string | null; onToken: (token: string) => Promise<void> }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <div className="basil-login" data-testid="token-screen">
      <form
        className="card basil-login-card"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          try {
            await onToken(token.trim());
          } finally {
            setBusy(false);
          }
        }}
      >
        <div className="card-block">
          <h2 className="basil-login-title">
            <span className="basil-logo" aria-hidden="true" /> Basil
          </h2>
          <p className="basil-muted">IO load balancing and storage QoS for vSphere</p>
          <div className={`clr-form-control${error ? ' clr-error' : ''}`}>
            <label className="clr-control-label" htmlFor="basil-token">
              API token
            </label>
            <div className={`clr-control-container${error ? ' clr-error' : ''}`}>
              <div className="clr-input-wrapper">
                <input
                  id="basil-token"
                  className="clr-input basil-token-input"
                  type="password"
                  autoComplete="off"
                  value={token}
                  onChange={(e) => setToken(e.target.value)}
                  data-testid="token-input"
                />
              </div>
              {error ? (
                <span className="clr-subtext" data-testid="token-error">
                  {error}
                </span>
              ) : (
                <span className="clr-subtext">Create one on the service's machine with: .venv/bin/basil token create --role operator NAME (the demo prints an admin token and keeps it in var/demo/admin.token)</span>
              )}
            </div>
          </div>
          <button type="submit" className="btn btn-primary basil-login-btn" disabled={busy || token.trim() === ''} data-testid="token-submit">
            {busy ? 'Checking…' : 'Sign in'}
          </button>
          <p className="basil-muted basil-help">The token stays in this browser tab only, and is forgotten when the tab closes.</p>
        </div>
      </form>
    </div>
  );
}
