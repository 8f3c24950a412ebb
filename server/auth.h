// Who may do what over the API: bearer tokens with roles (docs/API.md, "Tokens and roles").
//
//   viewer    reads everything
//   operator  reads; writes records, fires events, calls flows, cancels contexts
//   designer  reads; saves, test-runs, publishes, activates and deactivates definitions
//   admin     all of it
//
// With no tokens configured, clients on the loopback interface are admin (and the server
// refuses to listen anywhere else). Tokens are compared by their SHA-256, in constant time,
// and never logged. Authenticator is immutable once built: any thread may use it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flowrt::server {

enum class Role { kViewer, kOperator, kDesigner, kAdmin };

// What a route needs. kPublic routes (the viewer's files, /healthz, /readyz) need no token.
enum class Permission { kPublic, kRead, kOperate, kDesign };

std::string_view role_name(Role role);
std::optional<Role> role_from_name(std::string_view name);
bool role_allows(Role role, Permission permission);
std::string_view permission_name(Permission permission);

// A configured token: its name (what records and logs say), role and SHA-256 (32 bytes).
struct TokenEntry {
  std::string name;
  Role role = Role::kViewer;
  std::string sha256;  // 32 raw bytes
};

// The caller of one request.
struct Caller {
  std::string name;
  Role role = Role::kViewer;
  // False for the anonymous caller of a public route (no valid token): a cluster node that
  // forwards such a request says so, and the leader lets it reach public routes only.
  bool authenticated = true;
};

// The SHA-256 of `text`, 32 raw bytes (OpenSSL's libcrypto).
std::string sha256(std::string_view text);
// Bytes -> lower-case hex digits, two per byte.
std::string to_hex(std::string_view bytes);
// 64 hex digits (either case) -> 32 bytes; nullopt when not exactly that.
std::optional<std::string> from_hex(std::string_view hex);

class Authenticator {
 public:
  explicit Authenticator(std::vector<TokenEntry> tokens) : tokens_(std::move(tokens)) {}

  bool has_tokens() const { return !tokens_.empty(); }
  // The caller that presents `authorization` (the header's value, or "" when absent) from a
  // loopback address or not; nullopt when it is not let in (no token, or a wrong one).
  std::optional<Caller> authenticate(std::string_view authorization, bool loopback) const;
  // The same for a bare token (the event stream's access_token parameter).
  std::optional<Caller> authenticate_token(std::string_view token) const;

 private:
  std::vector<TokenEntry> tokens_;
};

}  // namespace flowrt::server
