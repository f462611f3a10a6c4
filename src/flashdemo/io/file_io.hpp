// file_io.hpp — how flashdemo reads and writes files, so that no file is lost, replaced by
// mistake or left half-written, whatever the input:
//   InputFile        a file, or a stream (a pipe, a FIFO, /dev/stdin), read to its end
//   OutputFiles      every output of a run, named before any work: each one checked against every
//                    input and every other output (the same file by device and inode, hard links
//                    and symbolic links included; by its real path when it does not exist yet),
//                    and its target a regular file of one's own or a new name in a writable
//                    directory (another user's file is refused, root's runs included; so is a
//                    path under /dev, /proc or /sys, by its name or its real path). A symbolic
//                    link is written through: the file it names is replaced, or created when the
//                    link dangles, and the link stays (a link of another user is not followed).
//                    The contents go to unique temporaries beside their targets (mkstemp:
//                    nothing else's name is ever touched), synced to the disk, renamed into place
//                    only when every one was written in full, the directories synced before and
//                    after; a run that fails before commit() replaces none and leaves no
//                    temporary.
//   The commit is undone as a whole: each file a rename replaces is kept (a hard link beside it)
//   until settle_outputs(true), when the run has also written its standard output; a rename that
//   fails, or settle_outputs(false), puts every earlier file back and removes the new ones. No
//   signal comes between the first rename and the last (every catchable one is held meanwhile).
//   A terminating signal (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2,
//   SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, where still at their default action; the handler is
//   installed when the first output is named, before any temporary exists) removes the
//   temporaries and undoes a commit not yet settled before it ends the process: an interrupted
//   run changes no file. A replaced file keeps its permission bits.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace fd {

// A path as a one-line message shows it: as given, or, when it holds a control character (a
// newline would split the line), quoted as bash's $'...' with the character escaped.
std::string shown(const std::string& path);

// A file that cannot be read or written; what() names the file and the reason in one line.
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An output that collides with an input or with another output (a usage mistake, not a file
// system's refusal).
struct FileClash : FileError {
  using FileError::FileError;
};

// A file opened for reading, read in pieces to its end: pipes, FIFOs and /dev/stdin too, whose
// size is known only once they end. Throws FileError ("PATH: cannot open: reason", "PATH: is a
// directory, not a file").
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();
  // Reads up to n bytes into buf: fewer only at the end of the file.
  std::size_t read(char* buf, std::size_t n);

 private:
  std::string path_;
  int fd_ = -1;
};

// One named file of the command line: the option it came from and the path given.
struct NamedFile {
  std::string option;  // "--save-o", "--q", ...
  std::string path;
};

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(OutputFiles&&) = default;
  OutputFiles& operator=(OutputFiles&&) = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes every temporary not committed

  // Adds an output (an empty path: none). Call check() once all are added.
  void add(const std::string& option, const std::string& path);
  // Before any work: no output is an input or another output (FileClash), and each can be
  // written (FileError naming the reason). Touches no file.
  void check(const std::vector<NamedFile>& inputs) const;
  bool has(const std::string& path) const;
  // Writes `bytes` for the output `path` to a fresh temporary beside it, every write checked.
  void stage(const std::string& path, const std::string& bytes);
  // Renames every staged temporary into place; outputs never staged are left alone. On a
  // failure every rename already made is undone (FileError). Until settle_outputs, the files it
  // replaced are kept, so the whole commit can still be undone.
  void commit();

 private:
  struct Output {
    NamedFile file;
    std::string target;  // the path renamed onto: symbolic links resolved
    int slot = -1;       // its staged temporary's place in the signals' list; -1: none
  };
  int open_temporary(Output& o);
  std::vector<Output> outputs_;
};

// Writes one file the same way (a run with a single output): stage, then commit.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The end of a run's commits: keep = true drops the files they replaced; false puts those back
// and removes the files the commits created (a run that failed after its commit, such as one
// whose standard output could not be written).
void settle_outputs(bool keep);

}  // namespace fd
