#include "runtime/project.h"

#include <filesystem>
#include <system_error>

#include "compiler/loader.h"
#include "runtime/run_config.h"
#include "store/store.h"

namespace flowrt {
namespace {

// The largest config.json read (a config is a few lines; this only refuses a wrong file).
constexpr size_t kMaxConfigBytes = size_t{16} << 20;

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

Result<ProjectFiles> project_files(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Error{"'" + dir + "' is not a directory"};
  const std::filesystem::path root(dir);
  ProjectFiles files;
  files.flows = (root / "flows").string();
  if (is_file(root / "config.json")) files.config = (root / "config.json").string();
  if (is_file(root / "events.jsonl")) files.events = (root / "events.jsonl").string();
  return files;
}

Result<Project, Diagnostics> read_project(ProjectFiles files) {
  Project project;
  project.options.virtual_clock = true;
  project.files = std::move(files);
  if (project.files.config.empty()) return project;
  Diagnostics diags;
  const std::string& path = project.files.config;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    diags.add(path, "", "no such file");
    return diags;
  }
  Result<std::string> text = read_file(path, kMaxConfigBytes);
  if (!text) {
    diags.add(path, "", text.message());
    return diags;
  }
  if (!read_run_config_text(*text, path, &project.options, &diags)) return diags;
  return project;
}

Result<Project, Diagnostics> read_project(const std::string& dir) {
  Result<ProjectFiles> files = project_files(dir);
  if (!files) {
    Diagnostics diags;
    diags.add(dir, "", "not a directory");
    return diags;
  }
  return read_project(std::move(*files));
}

Result<std::unique_ptr<Engine>, Diagnostics> open_project(const Project& project) {
  Result<std::unique_ptr<Engine>> opened = Engine::open(project.options);
  if (!opened) {
    Diagnostics diags;
    // The diagnostic names the file (the database); the store's message begins with it too.
    std::string message = opened.message();
    const std::string file = project.options.store == "postgresql" ? postgres_store_name(project.options.store_url)
                                                                    : project.options.data_file;
    if (!file.empty() && message.rfind(file + ": ", 0) == 0) message.erase(0, file.size() + 2);
    diags.add(file, "", std::move(message));
    return diags;
  }
  std::unique_ptr<Engine> engine = std::move(opened).value();
  Diagnostics diags = engine->load({project.files.flows});
  if (!diags.empty()) return diags;
  // A store that holds state: what was queued starts, what was running ends (DURABILITY.md).
  (void)engine->recover();
  return engine;
}

Result<std::unique_ptr<Engine>, Diagnostics> open_project(const std::string& dir) {
  Result<Project, Diagnostics> project = read_project(dir);
  if (!project) return project.error();
  return open_project(*project);
}

}  // namespace flowrt
