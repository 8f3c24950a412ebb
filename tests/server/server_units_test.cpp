// The server's pure parts: targets and query strings, JSON pointers of syntax errors, the
// listen address, tokens.
#include <gtest/gtest.h>

#include "plans/value_json.h"
#include "server/api_common.h"
#include "server/auth.h"
#include "server/router.h"
#include "server/serve.h"

namespace flowrt::server {
namespace {

TEST(SplitTargetTest, DecodesSegmentsAndQuery) {
  std::vector<std::string> segments;
  std::map<std::string, std::string, std::less<>> query;
  ASSERT_TRUE(split_target("/api/tables/my%20table/records/?limit=5&where=%7B%7D&x&a+b=c+d&limit=9", &segments, &query));
  EXPECT_EQ(segments, (std::vector<std::string>{"api", "tables", "my table", "records"}));
  EXPECT_EQ(query["limit"], "5");  // the first of a repeated name
  EXPECT_EQ(query["where"], "{}");
  EXPECT_EQ(query["x"], "");
  EXPECT_EQ(query["a b"], "c d");
  EXPECT_FALSE(split_target("api", &segments, &query));
  EXPECT_FALSE(split_target("/a%2", &segments, &query));
  EXPECT_FALSE(split_target("/a?b=%zz", &segments, &query));
  EXPECT_FALSE(split_target("/ap\x97i", &segments, &query));  // not UTF-8 as written
  EXPECT_FALSE(split_target("/a%FF", &segments, &query));      // nor once decoded
  EXPECT_FALSE(split_target("/a?x=%C0%80", &segments, &query));
  ASSERT_TRUE(split_target("/caf%C3%A9", &segments, &query));
  EXPECT_EQ(segments[0], "caf\xC3\xA9");
  ASSERT_TRUE(split_target("/", &segments, &query));
  EXPECT_TRUE(segments.empty());
}

TEST(ParseListenTest, HostAndPort) {
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(parse_listen("127.0.0.1:8480", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8480);
  ASSERT_TRUE(parse_listen("[::1]:0", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(parse_listen("127.0.0.1", &host, &port));
  EXPECT_FALSE(parse_listen("127.0.0.1:99999", &host, &port));
  ASSERT_TRUE(parse_listen("example.com:80", &host, &port)) << "a name, resolved when the service opens";
  EXPECT_EQ(host, "example.com");
  ASSERT_TRUE(parse_listen("localhost:0", &host, &port));
  EXPECT_EQ(host, "localhost");
  EXPECT_FALSE(parse_listen("127.0.0.1:", &host, &port));
  EXPECT_FALSE(parse_listen("local host:80", &host, &port));
  EXPECT_FALSE(parse_listen("-x:80", &host, &port));
  EXPECT_FALSE(parse_listen("a..b:80", &host, &port));
  EXPECT_FALSE(parse_listen("[localhost]:80", &host, &port)) << "brackets hold an IPv6 address";
  EXPECT_FALSE(parse_listen(":80", &host, &port));
}

TEST(AuthenticatorTest, TokensByTheirHash) {
  Authenticator auth({TokenEntry{"ops", Role::kOperator, sha256("s3cret")}});
  ASSERT_TRUE(auth.authenticate("Bearer s3cret", false));
  EXPECT_EQ(auth.authenticate("bearer s3cret", false)->name, "ops");
  EXPECT_FALSE(auth.authenticate("Bearer s3cre", true));
  EXPECT_FALSE(auth.authenticate("Basic s3cret", true));
  EXPECT_FALSE(auth.authenticate("", true));  // tokens configured: loopback needs one too
  Authenticator open({});
  EXPECT_EQ(open.authenticate("", true)->role, Role::kAdmin);
  EXPECT_FALSE(open.authenticate("", false));
  EXPECT_EQ(sha256("abc").size(), 32u);
  EXPECT_EQ(from_hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), sha256("abc"));
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(std::string("\x00\x0f\xf0", 3)), "000ff0");
  EXPECT_FALSE(from_hex("zz"));
}

TEST(RolesTest, WhatEachMayDo) {
  EXPECT_TRUE(role_allows(Role::kViewer, Permission::kRead));
  EXPECT_FALSE(role_allows(Role::kViewer, Permission::kOperate));
  EXPECT_FALSE(role_allows(Role::kOperator, Permission::kDesign));
  EXPECT_FALSE(role_allows(Role::kDesigner, Permission::kOperate));
  EXPECT_TRUE(role_allows(Role::kAdmin, Permission::kDesign));
  EXPECT_TRUE(role_allows(Role::kAdmin, Permission::kOperate));
}

}  // namespace
}  // namespace flowrt::server
