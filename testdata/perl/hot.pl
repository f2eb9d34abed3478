#!/usr/bin/perl
# Ten hot subs in two threads (or, `hot.pl fork SECONDS`, two processes:
# Devel::NYTProf profiles one thread only) for ehprof's Perl walk
# (tests/record_perl_priv_test.cc, bench/perl_vs_nytprof.py): recursion
# (hot_tree), a closure (the sub make_scaler returns), a sort block that
# calls a sub (sort_key, from pp_sort's C code) and a List::Util::reduce
# block (an XS function that runs Perl code through MULTICALL). Every call
# does some work of its own, so a profiler's cost per call stays small
# beside it. `hot.pl deep SECONDS`: one sub 50 calls deep, for the cost.
use strict;
use warnings;
use List::Util qw(reduce);

my $mode = $ARGV[0] // 'threads';
my $seconds = $ARGV[1] // 3;

sub hot_add {
    my ($n) = @_;
    my $s = 0;
    for (my $i = 0; $i < $n; $i++) { $s += $i * 3; }  # marker: hot_add loop
    return $s;
}

sub hot_tree {
    my ($depth) = @_;
    my $s = 0;
    $s += $_ for 1 .. 1000;
    return $s if $depth == 0;
    return $s + hot_tree($depth - 1) + hot_tree($depth - 1);
}

sub sort_key { my $v = $_[0]; my $k = 0; $k += ($v >> ($_ & 15)) & 1 for 0 .. 255; return $k * 100000 + $v }

sub hot_sort {
    my @list = map { ($_ * 7919) % 10007 } 1 .. $_[0];
    my @sorted = sort { sort_key($a) <=> sort_key($b) } @list;
    return $sorted[0];
}

sub hot_reduce {
    my $total = reduce { my $x = $a; $x += ($b * $_) % 7 for 1 .. 20; $x } 0 .. $_[0];
    return $total;
}

sub make_scaler {
    my ($factor) = @_;
    return sub {
        my $s = 0;
        $s += $_ * $factor for 1 .. $_[0];
        return $s;
    };
}

sub hot_str {
    my $s = '';
    $s .= chr(65 + $_ % 26) for 1 .. $_[0];
    return length $s;
}

sub hot_hash {
    my %h;
    $h{ $_ % 997 } += $_ for 1 .. $_[0];
    return scalar keys %h;
}

sub hot_regex {
    my $text = join ' ', map { "w$_" } 1 .. $_[0];
    my $n = 0;
    $n++ while $text =~ /w(\d*7)\b/g;
    return $n;
}

sub hot_join {
    my $s = 0;
    for my $i (1 .. $_[0]) { $s += length join ',', $i, $i + 1, $i + 2; }
    return $s;
}

sub thread_one {
    my $end = time + $seconds;
    my $scale = make_scaler(3);
    while (time < $end) {
        hot_add(40000);
        hot_tree(5);
        hot_sort(60);
        hot_reduce(800);
        $scale->(20000);
    }
}

sub thread_two {
    my $end = time + $seconds;
    while (time < $end) {
        hot_str(30000);
        hot_hash(20000);
        hot_regex(3000);
        hot_join(10000);
        hot_add(20000);
    }
}

sub deep {
    my ($n) = @_;
    return deep($n - 1) if $n > 1;
    my $end = time + $seconds;
    my $s = 0;
    while (time < $end) { $s += $_ for 1 .. 1000; }
    return $s;
}

if ($mode eq 'deep') {
    deep(50);
} elsif ($mode eq 'fork') {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) { thread_two(); exit 0; }
    thread_one();
    waitpid $pid, 0;
} else {
    require threads;
    my $t = threads->create(\&thread_two);
    thread_one();
    $t->join;
}
