#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace flowrt::server {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kDesigner: return "designer";
    case Role::kAdmin: return "admin";
  }
  return "viewer";
}

std::optional<Role> role_from_name(std::string_view name) {
  for (Role r : {Role::kViewer, Role::kOperator, Role::kDesigner, Role::kAdmin}) {
    if (role_name(r) == name) return r;
  }
  return std::nullopt;
}

bool role_allows(Role role, Permission permission) {
  switch (permission) {
    case Permission::kPublic:
    case Permission::kRead: return true;
    case Permission::kOperate: return role == Role::kOperator || role == Role::kAdmin;
    case Permission::kDesign: return role == Role::kDesigner || role == Role::kAdmin;
  }
  return false;
}

std::string_view permission_name(Permission permission) {
  switch (permission) {
    case Permission::kPublic: return "see public pages";
    case Permission::kRead: return "read";
    case Permission::kOperate: return "operate (write records, fire events, call flows, cancel contexts)";
    case Permission::kDesign: return "design (save, publish, activate and deactivate definitions)";
  }
  return "";
}

std::string sha256(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1 || size != 32) return {};
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(32, '\0');
  for (size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::optional<Caller> Authenticator::authenticate(std::string_view authorization, bool loopback) const {
  if (tokens_.empty()) {
    if (loopback) return Caller{"loopback", Role::kAdmin};
    return std::nullopt;
  }
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size()) return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i) {  // the scheme is case-insensitive (RFC 7235)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(kBearer[i]))) {
      return std::nullopt;
    }
  }
  return authenticate_token(authorization.substr(kBearer.size()));
}

std::optional<Caller> Authenticator::authenticate_token(std::string_view token) const {
  if (tokens_.empty() || token.empty()) return std::nullopt;
  const std::string digest = sha256(token);
  if (digest.size() != 32) return std::nullopt;
  // Every entry is compared, whichever matches: the time taken says nothing of which did.
  const TokenEntry* match = nullptr;
  for (const TokenEntry& t : tokens_) {
    if (CRYPTO_memcmp(t.sha256.data(), digest.data(), 32) == 0) match = &t;
  }
  if (!match) return std::nullopt;
  return Caller{match->name, match->role};
}

}  // namespace flowrt::server
