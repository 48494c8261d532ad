// Package blast is the medic plugin for NCBI BLAST+ searches (the ParaMEDIC
// mpiBLAST plugin).
//
// At the compute site Encode keeps only what the storage site cannot
// recompute from its own replica of the database: the query sequences, the
// search options, the original database's title and total residues, the
// accessions of the hit sequences in the original database's order (OID
// order), and the text of the few lines that describe the database rather
// than the hits. Encode runs no search: it reads the output and asks
// blastdbcmd for the hits' OIDs, so it costs a fraction of a second.
//
// At the storage site Decode extracts those sequences from the local replica
// (blastdbcmd -entry_batch, with their long ids, so that sseqid prints as
// it did), builds a tiny database from them in that order (makeblastdb)
// and re-runs the same search with -dbsize set to the original database's
// residues. That is what makes the result exact: the E-values then match
// and tabular output (-outfmt 6/10) is byte-identical; -outfmt 7 differs
// only in its "# Database:" path lines and the final query count, the
// pairwise report (-outfmt 0) only in the database counts in the header
// and footer, the posted date and each query's "Effective search space
// used" line, and Decode writes the original text back over those lines.
//
// The re-run is spread over the storage site's cores (resource
// blast.workers, default: all of them): the queries are cut into
// consecutive chunks (blast.chunks, default 4 per worker), the chunks run
// concurrently, and their outputs are joined as one run would have printed
// them (one header, one footer). When the output can be cut at its queries
// (always for -outfmt 0 and 7; for 6 and 10 when a column is qseqid, qacc
// or qaccver, as in the default columns, and the query file's ids tell its
// records apart) the chunks are of about equal weight (the bytes each
// query took in the original output) and each searches only its own
// queries' hits (-seqidlist). Searching the whole tiny database instead
// gains marginal hits (E near the cutoff) that belong to other queries,
// and can order hits of equal score differently: BLAST's preliminary
// cutoffs depend on the database searched. Decode then compares
// each query's hits with the ones the compute site saw, and a query that
// still differs is searched again alone, restricted to its own hits, which
// gives its original section back. Tabular output that cannot be cut
// (no query id column) is searched against the whole tiny database and
// may not come back exact at BLAST's default E-value. If the result
// differs from the original's SHA-256, Decode fails with medic.ErrDigest
// and nothing is kept; `pario medic send` then sends the output again with
// its fallback plugin (zstd).
//
// # Params (Source.Params, `pario medic send --param key=value`)
//
//	program          blastp | blastn | blastx | tblastn | tblastx  (required)
//	query            query FASTA file, relative to Source.Dir       (required)
//	db               BLAST database path at the compute site; it must be
//	                 the one the search ran against and must have been
//	                 built with makeblastdb -parse_seqids            (required)
//	outfmt           "0" (pairwise, default), "6", "7", "10" or a custom
//	                 tabular spec such as "6 qseqid sseqid evalue"; the
//	                 tabular forms must include sseqid, sacc, saccver or
//	                 sallseqid so the hits can be read from the output,
//	                 and should include qseqid, qacc or qaccver so each
//	                 query's hits can be (see above)
//	evalue           -evalue (default BLAST's 10)
//	max_target_seqs  -max_target_seqs (default BLAST's)
//	options          further search options, whitespace-separated, exactly
//	                 as given to the original search ("-seg yes -word_size 3");
//	                 no quoting; options that name the database, the
//	                 query, the output or a subset of the database (-db,
//	                 -query, -out, -outfmt, -dbsize, -searchsp, -remote,
//	                 -subject, -gilist, -seqidlist, -negative_seqidlist,
//	                 -taxids, -taxidlist, ..., -import/-export_search_strategy)
//	                 are refused, and -evalue and -max_target_seqs have
//	                 their own keys; Decode checks the same list, and
//	                 leaves out -num_threads and -mt_mode (the storage
//	                 site's blast.workers decide its parallelism)
//	bin              directory holding the BLAST+ programs at the compute
//	                 site (default: $PATH)
//
// How the hits are read from the output: for tabular formats the subject id
// column; for -outfmt 0 the first word of every line in the "Sequences
// producing significant alignments" lists and of every ">" alignment
// header. Each id is mapped to its OID in the compute site's database with
// `blastdbcmd -entry_batch -outfmt '%o %a'`; an id the database does not
// know fails the encode.
//
// # Storage-site resources (Env.Resources)
//
//	blast.db   path of the local replica of the database (required)
//	blast.bin  directory holding blastdbcmd, makeblastdb and the search
//	           programs (default: $PATH; Debian package ncbi-blast+)
//	blast.workers  searches to run at once (default: the number of CPUs)
//	blast.chunks   searches in all (default: 4 per worker); more chunks
//	               search fewer candidates each but start more processes
//
// The receiver checks them when it starts (Plugin.CheckResources, through
// medic.CheckResources): blast.db with blastdbcmd -info.
//
// A replica that lacks a hit sequence fails Decode with an error wrapping
// medic.ErrMissing that names the missing accessions; nothing is written to
// the output. Decode also checks the SHA-256 of the regenerated output
// against the one recorded at the compute site before writing anything.
package blast
