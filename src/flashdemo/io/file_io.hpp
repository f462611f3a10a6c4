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
// Every refusal is a FileError: a FileProblem (the kind), the file and the facts it names, and
// its English line as what(); the command line words the kind in the user's language.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fd {

// A path as a one-line message shows it: as given, or, when it holds a control character (a
// newline would split the line), quoted as bash's $'...' with the character escaped.
std::string shown(const std::string& path);

// One named file of the command line: the option it came from and the path given.
struct NamedFile {
  std::string option;  // "--save-o", "--q", ...; "" for a file named by no option
  std::string path;
};

// A named file as a message names it: "--save-o o.npy", or the path alone ("o.npy").
std::string shown(const NamedFile& file);

// What is wrong with a file: one kind per message. The library never words it in a language of
// the user's: a FileError carries the kind, the file and the facts below, and the command line
// words them (demos/ui/messages/files.inc, ui::describe); what() keeps the English, one line, for
// library users and tests. Each kind says which facts it fills.
enum class FileProblem {
  worded,  // what() is the whole message, worded by whoever threw it (the UI's checks of a file)
  // Reading (InputFile, read_npy).
  cannot_open,   // error
  is_directory,  // an input that is a directory
  cannot_read,   // error
  // Writing (OutputFiles, write_file_atomically, write_npy).
  cannot_write,          // error
  too_many_outputs,      // more staged at once than the signal handler's slots
  not_an_output,         // a bug: a path staged that was never added
  clash_input,           // FileClash; other: the input it is
  clash_output,          // FileClash; other: the earlier output it is
  system_file,           // words: {"/dev/", "/proc/" or "/sys/"}
  foreign_link,          // numbers: {the link's owner, a uid}
  output_is_directory,   // an output that is a directory
  not_regular,           // a device, a FIFO or a terminal
  foreign_file,          // numbers: {the file's owner, a uid}
  cannot_write_there,    // error (its directory missing, or not writable)
  parent_not_directory,  // other.path: the directory on the way, which is not one
  // A .npy file (NpyError).
  bad_magic,            // not a .npy file
  truncated_header,     // the file ends inside its header
  unsupported_version,  // numbers: {major, minor}
  header_too_long,      // numbers: {the header length}
  repeated_key,         // words: {the key}
  missing_key,          // words: {the key}
  malformed_near_key,   // words: {the key}
  malformed_shape,      // a shape with no closing ')'
  shape_not_tuple,      // words: {the shape as the header writes it, shortened}
  too_many_dimensions,  // words: {the shape}; numbers: {its dimensions}
  unsupported_dtype,    // words: {the descr, as the header writes it, shortened}
  fortran_order,        // column-major data
  shape_too_large,      // more elements than flashdemo counts
  truncated_data,       // numbers: {elements promised, their bytes, the bytes there}
  too_large,            // NpyTooLarge; numbers: {elements, MB to read them, MB available}
  not_finite,           // words: {the element's place, "(3, 1)" or "[3]"; "nan", "inf" or "-inf"}
};

// The facts a FileProblem names, as the kind says (the rest left empty).
struct FileFacts {
  int error = 0;                   // errno: why the system refused
  NamedFile other;                 // the other file of a clash; a directory on the way
  std::vector<std::string> words;  // keys, pieces of a header, places, as the kind lists them
  std::vector<long long> numbers;  // sizes, counts, versions, uids
};

// The English one line of a problem ("o.npy: cannot open: No such file or directory").
std::string in_english(FileProblem problem, const NamedFile& file, const FileFacts& facts);

// A file that cannot be read or written; what() names the file and the reason in one line, in
// English. problem, file and facts say the same for a caller that words it itself.
struct FileError : std::runtime_error {
  // A message already worded by the thrower: problem is FileProblem::worded.
  explicit FileError(const std::string& worded) : std::runtime_error(worded) {}
  FileError(FileProblem problem_, NamedFile file_, FileFacts facts_ = {})
      : std::runtime_error(in_english(problem_, file_, facts_)),
        problem(problem_),
        file(std::move(file_)),
        facts(std::move(facts_)) {}
  FileProblem problem = FileProblem::worded;
  NamedFile file;  // the file, and the option that named it (for an output)
  FileFacts facts;
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
