// The web viewer: its files, served from the binary at "/", "/app.css", "/contexts.js" and
// "/app.js".
// They hold no data: every page reads the API with the token the person gives.
#include "server/api.h"
#include "server/viewer_files.h"

namespace flowrt::server {
namespace {

std::string_view content_type(std::string_view path) {
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  return "text/html; charset=utf-8";
}

}  // namespace

// The files are public (no token): the page asks for a token itself.
void add_viewer_routes(Router& router) {
  for (const ViewerFile& f : viewer_files()) {
    router.add(http::verb::get, f.path, Permission::kPublic, [&f](const ApiRequest&) -> Reply {
      Response res = text_response(http::status::ok, content_type(f.path), std::string(f.data, f.size));
      res.set("Content-Security-Policy",
              "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:");
      res.set("X-Content-Type-Options", "nosniff");
      return res;
    });
  }
}

}  // namespace flowrt::server
