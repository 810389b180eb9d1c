// A stand-in for the vSphere Client's htmlClientSdk (served to remote plugin views at
// /api/ui/htmlClientSdk.js), for the plugin's end-to-end tests. The test fills in __BASIL_STUB_CONFIG__:
// the context objects, the session token, the vSphere Client's API endpoint and the first theme.
// window.__basilStub lets the test switch the theme and read what the plugin asked of the client.
(function () {
  var config = __BASIL_STUB_CONFIG__;
  var themeCallbacks = [];
  var stub = { theme: config.theme, navigations: [], sessionRequests: 0, initialized: false };
  stub.setTheme = function (name) {
    stub.theme = name;
    themeCallbacks.forEach(function (cb) {
      cb({ name: name });
    });
  };
  window.__basilStub = stub;
  window.htmlClientSdk = {
    initialize: function (callback) {
      setTimeout(function () {
        stub.initialized = true;
        callback();
      }, 0);
    },
    isInitialized: function () {
      return stub.initialized;
    },
    app: {
      getContextObjects: function () {
        return config.contextObjects;
      },
      getSessionInfo: function (callback) {
        stub.sessionRequests += 1;
        setTimeout(function () {
          callback({ sessionToken: config.sessionToken });
        }, 0);
      },
      getApiEndpoints: function () {
        return { uiApiEndpoint: { fullUrl: config.uiApiEndpoint } };
      },
      getTheme: function () {
        return { name: stub.theme };
      },
      getClientLocale: function () {
        return 'en-US';
      },
      getNavigationData: function () {
        return null;
      },
      navigateTo: function (options) {
        stub.navigations.push(options);
      },
    },
    event: {
      onThemeChanged: function (callback) {
        themeCallbacks.push(callback);
      },
    },
  };
})();
